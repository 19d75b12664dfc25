"""Archivist for LangGraph: `ArchivistStore` (a `BaseStore`) and `render_hook` (a pre-model hook)."""

from archivist_langgraph.hook import render_hook
from archivist_langgraph.store import ArchivistStore

__all__ = ["ArchivistStore", "render_hook"]
