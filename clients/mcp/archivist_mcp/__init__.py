"""Archivist as an MCP server (`archivist-mcp --transport stdio|http`)."""

from archivist_mcp.server import build_server

__all__ = ["build_server"]
