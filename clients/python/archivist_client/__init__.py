"""A client for Archivist, governed long-term memory for AI agents (`Archivist`, `AsyncArchivist`)."""

from archivist_client.client import Archivist, AsyncArchivist
from archivist_client.errors import (
    ArchivistError,
    Conflict,
    Forbidden,
    Forgotten,
    LimitReached,
    NotFound,
    Refused,
    Throttled,
    Unauthenticated,
    Unavailable,
)
from archivist_client.models import Place

__all__ = [
    "Archivist",
    "ArchivistError",
    "AsyncArchivist",
    "Conflict",
    "Forbidden",
    "Forgotten",
    "LimitReached",
    "NotFound",
    "Place",
    "Refused",
    "Throttled",
    "Unauthenticated",
    "Unavailable",
]
