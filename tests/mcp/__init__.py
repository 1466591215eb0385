"""Tests of the MCP server: tools, schemas and transports. Must not import ``bench``."""
