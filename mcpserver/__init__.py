"""The MCP server of Knowledge Bank (API.md "MCP"): fourteen tools over the REST views.

Named ``mcpserver`` so it never shadows the SDK's ``mcp`` package. Lives here: transport (the
tools, their schemas, stdio and HTTP). Must not live here: domain rules or writes of its own.
"""
