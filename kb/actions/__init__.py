"""kb's use cases as actions (:mod:`kb.actions.base` holds the base class and the caller).

Lives here: one :class:`~kb.actions.base.Action` per use case kb owns whole (entries read,
edit, verify, retire/restore; claims; tokens; imports), each declaring its input once.
Must not live here: transports (REST views in ``kb.api``, MCP in ``mcpserver``, admin views),
row writes (services in ``kb.services``), anything that needs the graph app (its actions live
in ``graph.actions``)."""
