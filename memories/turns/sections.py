"""Sections other planes add to a rendered block, without `memories` knowing who they are."""

# System recall (admitted network claims) is a plane of its own, owned by
# `admissions`, and must never widen the account-scoped recall query. It plugs in
# here instead: a provider is registered once at start-up (from its app's
# `ready()`), is called on every render with the principal, the place and the
# cutoff, and returns the lines it wants shown. The render fences, escapes and
# clamps those lines like any fact, and records them in the injection so a
# replay shows them again and an erasure reaches them.
#
# `memories` never imports a provider's module; the dependency runs the other way.
#
# A provider that fails costs its section, not the render: `plane_sections`
# leaves the section out and returns an omission saying which plane and why,
# which the render records like any other omission.

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date

from django.db import transaction

from memories.scopes import Place
from memories.turns import render

logger = logging.getLogger(__name__)


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


def plane_sections(*, principal, place: Place, cutoff: date, limit: int) -> tuple[list[render.Section], list[dict]]:
    """Every registered plane's section for this render, and an omission for each plane that failed.

    Each provider runs in a savepoint, so one that fails inside the database
    leaves the render's transaction usable.
    """
    sections: list[render.Section] = []
    omissions: list[dict] = []
    for name, provider in render_section_providers():
        try:
            with transaction.atomic():
                produced = provider(principal, place, cutoff)
                if not produced:
                    continue
                if isinstance(produced, SectionLines):
                    title, lines = produced.title, list(produced.lines)
                else:
                    title, lines = name, list(produced)
                section = render.section_from(name, title, lines, limit) if lines else None
        except Exception as error:  # noqa: BLE001 - a plane that fails is an omission, never a failed render
            logger.warning("render plane %s failed and was left out: %s", name, error)
            omissions.append(
                {
                    "scope": f"section:{name}",
                    "count": 0,
                    "reason": f"The {name} plane could not be read ({type(error).__name__}); its section was left out.",
                }
            )
            continue
        if section is not None:
            sections.append(section)
    return sections, omissions
