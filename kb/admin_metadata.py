"""An entry's metadata and steps in the admin as labelled fields, not JSON boxes.

- **Metadata**: the keys the app reads (the workflow flags ``start``, ``terminal`` and
  ``external``; a risk's ``likelihood`` and ``impact``; a ``severity``) are form fields with
  their meaning as the label; every other key is a row of a small name/value table, with blank
  rows to add more. A value typed as ``true``, ``false``, a number, ``[...]`` or ``{...}`` is
  stored as that JSON value; anything else is text. Problems are said in words ("Row 2 has a
  value but no name"). An empty form is ``{}``; nothing is shown as ``null``.
- **Steps**: one step per line (a line holding a JSON object stays an object); no steps is an
  empty box, stored as no steps.

The fields give the form plain Python values; the entry service checks them as it checks the
REST payload (``clean_entry_data``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from django import forms
from django.forms.utils import flatatt
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

BLANK_ROWS = 3
TRUE_WORDS = frozenset({"true", "yes", "1", "on"})


@dataclass(frozen=True)
class KnownKey:
    key: str
    label: str
    help: str
    choices: tuple[str, ...] | None = None  # None: a yes/no flag; () free text

    @property
    def is_flag(self) -> bool:
        return self.choices is None


LEVELS = ("low", "medium", "high")
KNOWN_KEYS = (
    KnownKey("start", "Starts its process", "A workflow step where the process begins."),
    KnownKey(
        "terminal", "Ends its process", "A workflow step where the process may end (no next step)."
    ),
    KnownKey(
        "external",
        "Comes from outside the process",
        "Made or done elsewhere: a step may require it though no step here produces it.",
    ),
    KnownKey("likelihood", "Likelihood", "How likely the risk is.", LEVELS),
    KnownKey("impact", "Impact", "How bad it is if it happens.", LEVELS),
    KnownKey("severity", "Severity", "As your alerting names it (e.g. P2).", ()),
)
KNOWN = {k.key: k for k in KNOWN_KEYS}


def _is_set(value) -> bool:
    return value is True or (isinstance(value, str) and value.strip().lower() in TRUE_WORDS)


def shown_value(value) -> str:
    """A metadata value as typed in its box: text as is, other JSON values as JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def typed_value(text: str):
    """What a typed value stores: JSON literals and containers as JSON, the rest as text."""
    stripped = text.strip()
    if stripped in ("true", "false") or stripped[:1] in ("[", "{") or _number(stripped):
        try:
            return json.loads(stripped)
        except ValueError:
            return text
    return text


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return text.lower() not in ("nan", "inf", "-inf", "infinity", "-infinity")


class MetadataWidget(forms.Widget):
    """Known keys as labelled controls, the others as name/value rows."""

    def format_value(self, value):
        if isinstance(value, str):
            try:
                value = json.loads(value) if value.strip() else {}
            except ValueError:
                value = {}
        return value if isinstance(value, dict) else {}

    def value_from_datadict(self, data, files, name):
        known = {}
        for spec in KNOWN_KEYS:
            field = f"{name}__{spec.key}"
            known[spec.key] = (field in data) if spec.is_flag else data.get(field, "")
        rows = []
        count = (
            int(data.get(f"{name}__rows") or 0)
            if str(data.get(f"{name}__rows", "")).isdigit()
            else 0
        )
        for i in range(min(count, 500)):
            rows.append((data.get(f"{name}__key_{i}", ""), data.get(f"{name}__value_{i}", "")))
        return {"known": known, "rows": rows}

    def value_omitted_from_data(self, data, files, name):
        return f"{name}__rows" not in data

    def _known_html(self, name, value) -> str:
        parts = []
        for spec in KNOWN_KEYS:
            field = f"{name}__{spec.key}"
            current = value.get(spec.key)
            if spec.is_flag:
                checked = " checked" if _is_set(current) else ""
                control = format_html(
                    '<input type="checkbox" name="{}" id="id_{}"{}>',
                    field,
                    field,
                    mark_safe(checked),
                )
            elif spec.choices:
                options = ["", *spec.choices]
                text = "" if current is None else shown_value(current)
                if text and text not in options:
                    options.append(text)  # an unusual stored value stays choosable
                control = format_html(
                    '<select name="{}" id="id_{}">{}</select>',
                    field,
                    field,
                    format_html_join(
                        "",
                        '<option value="{}"{}>{}</option>',
                        (
                            (o, mark_safe(" selected") if o == text else "", o or "—")
                            for o in options
                        ),
                    ),
                )
            else:
                text = "" if current is None else shown_value(current)
                control = format_html(
                    '<input type="text" name="{}" id="id_{}" value="{}" size="20">',
                    field,
                    field,
                    text,
                )
            parts.append(
                format_html(
                    '<div class="kb-meta-known"><label for="id_{}">{}</label> {} '
                    '<span class="help">{}</span></div>',
                    field,
                    spec.label,
                    control,
                    spec.help,
                )
            )
        return "".join(parts)

    def render(self, name, value, attrs=None, renderer=None):
        value = self.format_value(value)
        others = [(k, v) for k, v in value.items() if k not in KNOWN]
        rows = [(k, shown_value(v)) for k, v in others] + [("", "")] * BLANK_ROWS
        body = format_html_join(
            "",
            '<tr><td><input type="text" name="{0}__key_{1}" value="{2}" size="18" '
            'aria-label="Name of row {3}"></td><td><input type="text" name="{0}__value_{1}" '
            'value="{4}" size="40" aria-label="Value of row {3}"></td></tr>',
            ((name, i, k, i + 1, v) for i, (k, v) in enumerate(rows)),
        )
        return format_html(
            '<div class="kb-metadata"{}>{}<table class="kb-meta-rows"><thead><tr><th>Other '
            "name</th><th>Value</th></tr></thead><tbody>{}</tbody></table>"
            '<input type="hidden" name="{}__rows" value="{}">'
            '<p class="help">Other names: clear a row to remove it. A value written as true, '
            "false, a number, [list] or {{object}} is kept as that; anything else is text."
            "</p></div>",
            flatatt({"id": (attrs or {}).get("id", f"id_{name}")}),
            mark_safe(self._known_html(name, value)),
            body,
            name,
            len(rows),
        )


class MetadataField(forms.Field):
    widget = MetadataWidget

    def __init__(self, *, encoder=None, decoder=None, **kwargs):
        kwargs.setdefault("required", False)
        super().__init__(**kwargs)

    def prepare_value(self, value):
        return value

    def to_python(self, value):
        if value in (None, ""):
            return {}
        if isinstance(value, dict) and "known" not in value:
            return value  # an initial value
        out: dict = {}
        problems: list[str] = []
        for spec in KNOWN_KEYS:
            raw = value["known"].get(spec.key)
            if spec.is_flag:
                if raw:
                    out[spec.key] = True
            elif str(raw or "").strip():
                out[spec.key] = str(raw).strip()
        for i, (key, text) in enumerate(value["rows"], start=1):
            key, text = str(key).strip(), str(text)
            if not key and not text.strip():
                continue
            if not key:
                problems.append(f"Row {i} has a value but no name: name it or clear the value.")
            elif key in KNOWN:
                problems.append(
                    f"Row {i}: “{key}” has its own field above ({KNOWN[key].label}); use that."
                )
            elif key in out:
                problems.append(f"Row {i}: “{key}” is named twice; keep one row.")
            else:
                out[key] = typed_value(text)
        if problems:
            raise forms.ValidationError(problems)
        return out

    def has_changed(self, initial, data):
        try:
            return self.to_python(data) != (initial or {})
        except forms.ValidationError:
            return True


class StepsWidget(forms.Textarea):
    def format_value(self, value):
        if isinstance(value, str):
            try:
                value = json.loads(value) if value.strip() else None
            except ValueError:
                return value
        if not value:
            return ""
        return "\n".join(
            s if isinstance(s, str) else json.dumps(s, ensure_ascii=False) for s in value
        )


class StepsField(forms.Field):
    """One step per line; a line holding a JSON object is kept as an object."""

    widget = StepsWidget

    def __init__(self, *, encoder=None, decoder=None, **kwargs):
        kwargs.setdefault("required", False)
        kwargs.setdefault("help_text", "One step per line, in order. Leave empty for none.")
        super().__init__(**kwargs)

    def to_python(self, value):
        if value is None or isinstance(value, list):
            return value or None
        steps = []
        for number, line in enumerate(str(value).splitlines(), start=1):
            line = line.strip()
            if not line:
                continue
            if line.startswith("{"):
                try:
                    parsed = json.loads(line)
                except ValueError:
                    raise forms.ValidationError(
                        f"Line {number} starts with {{ but is not a JSON object: write the step "
                        "as plain words, or fix the object."
                    ) from None
                steps.append(parsed)
            else:
                steps.append(line)
        return steps or None

    def has_changed(self, initial, data):
        try:
            return self.to_python(data) != (initial or None)
        except forms.ValidationError:
            return True
