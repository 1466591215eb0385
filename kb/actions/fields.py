"""Declared input fields the actions share, whose errors keep the contract's codes and
messages (API.md): a query-string whole number answers exactly as ``int_param`` always did."""

from __future__ import annotations

from rest_framework import serializers

from kb.api.params import whole_number_in


class WholeNumber(serializers.IntegerField):
    """A whole number in [min_value, max_value], given as a JSON integer (MCP) or as the text
    of one (a query string). Out of range, empty or not a number: 400 ``invalid_input``
    "<name> must be a whole number from <low> to <high>." — the schema keeps the bounds."""

    def to_internal_value(self, data):
        return whole_number_in(self.field_name, data, self.min_value, self.max_value)
