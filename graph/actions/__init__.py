"""graph's use cases as actions (:class:`kb.actions.base.Action` subclasses): entries that
need edges (creating one with its connections, deleting one with bridging, reading one with
its edges and aliases now or as of a time, retiring and restoring), edges (link, unlink,
retype, renote, invalidate), aliases, the query, resolve, traverse, the context bundle,
merges, splits, reverts, extraction and the proposal queues.

Lives here: one action per use case, its declared input (the DRF serializers the OpenAPI
operation and the MCP tool are generated from) and its presenter. Must not live here: row
writes and semantic rules (services in ``graph.edges``, ``graph.curation``,
``graph.resolution``, ``graph.retrieval``, ``kb.services``), transports (REST views in
``graph.api``, admin in ``graph.admin``, MCP tools in ``mcpserver``)."""
