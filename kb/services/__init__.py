"""The use cases of ``kb``: one service per mutation (create, update, verify, revoke...),
validated, done in one transaction and recorded in the audit trail. REST, admin, MCP,
commands and tasks all call these; nothing else writes ``kb`` rows. Must not import the API
layer."""
