"""Sections other planes add to a rendered block, without `memories` knowing who they are.

System recall (admitted network claims) is a plane of its own, owned by
`admissions`, and must never widen the account-scoped recall query. It plugs in
here instead: a provider is registered once at start-up (from its app's
`ready()`), is called on every render with the principal, the place and the
cutoff, and returns the lines it wants shown. The render fences, escapes and
clamps those lines like any fact, and records them in the injection so a
replay shows them again and an erasure reaches them.

`memories` never imports a provider's module; the dependency runs the other way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date

from memories.scopes import Place


@dataclass(frozen=True)
class SectionLines:
    """What a provider returns: a title and lines, each a string or `(text, memory_id)`."""

    title: str
    lines: Iterable


# provider(principal, place, cutoff) -> SectionLines | list of lines | None
SectionProvider = Callable[[object, Place, date], "SectionLines | list | None"]

_providers: dict[str, SectionProvider] = {}


def register_render_section(provider: SectionProvider, *, name: str | None = None) -> SectionProvider:
    """Add a provider (idempotent by name, so a reloaded app does not add it twice). Usable as a decorator."""
    key = name or f"{provider.__module__}.{getattr(provider, '__qualname__', repr(provider))}"
    _providers[key] = provider
    return provider


def unregister_render_section(name: str) -> None:
    _providers.pop(name, None)


def render_section_providers() -> list[tuple[str, SectionProvider]]:
    """Registered providers in name order, so every render calls them in the same order."""
    return sorted(_providers.items())
