"""Tests of the REST contract: the OpenAPI snapshot, tenancy on every route, inputs and limits,
the write state machine. Must not import ``bench``.
"""
