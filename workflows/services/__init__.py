"""Workflow use cases and gap rules: each rule a pure function (no database access) returning
a finding; services load, apply the rules and store the report. Must not import the API layer."""
