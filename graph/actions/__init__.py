"""graph's use cases as actions (:class:`kb.actions.base.Action` subclasses): the ones that
need edges — creating an entry with its connections, deleting one with bridging, reading an
entry with its edges and aliases (now or as of a time), retiring and restoring.

Lives here: one action per use case, its declared input, and the presentation of its answer.
Must not live here: transports (REST views in ``graph.api``, MCP tools in ``mcpserver``, admin
views in ``graph.admin``) and row writes (the services of ``graph.curation``, ``graph.edges``,
``kb.services``)."""
