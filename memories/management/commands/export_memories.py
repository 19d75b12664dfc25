"""`manage.py export_memories --org SLUG`: an organisation's live memories as JSON lines (`memories.transfer`)."""

from __future__ import annotations

import json

from django.core.management.base import CommandError

from accounts.models import Organisation
from lib.commands import CommandWithoutChecks
from memories.transfer import memories_export


class Command(CommandWithoutChecks):
    help = (
        "Write an organisation's live memories as JSON lines, one remember request per line, after a header "
        "line; supersede chains are kept as `supersedes` references, receipts and erased rows left out."
    )

    def add_arguments(self, parser):
        parser.add_argument("--org", required=True, help="the organisation's slug")
        parser.add_argument("--output", "-o", default="-", help="a file to write (default: standard output)")

    def handle(self, *args, org: str, output: str, **options):
        organisation = Organisation.objects.filter(slug=org).first()
        if organisation is None:
            raise CommandError(f"No organisation with the slug {org!r}.")
        stream = self.stdout if output == "-" else open(output, "w", encoding="utf-8")  # noqa: SIM115
        count = -1  # the header is not a memory
        try:
            for row in memories_export(organisation=organisation):
                stream.write(json.dumps(row, ensure_ascii=False) + "\n")
                count += 1
        finally:
            if stream is not self.stdout:
                stream.close()
        self.stderr.write(f"Exported {count} memories of {org}.")
