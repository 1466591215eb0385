"""The MCP server of Knowledge Bank (API.md "MCP"): fourteen tools over the REST views.

Named ``mcpserver`` so it never shadows the SDK's ``mcp`` package.
"""
