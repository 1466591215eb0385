"""Workflows: processes described as steps over entries, their subgraphs and gap reports.

Lives here: the workflow models, rules (pure functions) and services, REST and admin. Must not
live here: edge or entry writes that bypass ``graph`` or ``kb`` services.
"""
