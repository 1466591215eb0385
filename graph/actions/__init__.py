"""graph's use cases as actions (:class:`kb.actions.base.Action` subclasses): edges (link,
unlink, retype, renote, invalidate), aliases, the query, resolve, traverse, the context bundle,
merges, splits, reverts and the proposal queues.

Lives here: one action per use case, its declared input (the DRF serializers the OpenAPI
operation and the MCP tool are generated from) and its presenter. Must not live here: row
writes and semantic rules (services in ``graph.edges``, ``graph.curation``,
``graph.resolution``, ``graph.retrieval``), transports (REST views in ``graph.api``, admin in
``graph.admin``, MCP tools in ``mcpserver``)."""
