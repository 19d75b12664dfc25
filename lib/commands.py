"""The base of Archivist's own management commands, which run beside a running server."""

from __future__ import annotations

from django.core.management.base import BaseCommand


class CommandWithoutChecks(BaseCommand):
    """A command that skips Django's system checks: they import every URL and view (most of a command's second),
    and `migrate`, which the run command starts with, and `make test` already run them."""

    requires_system_checks: list[str] = []
