"""`manage.py import_memories FILE --org SLUG --agent NAME --format archivist|mem0|jsonl` (`memories.transfer`)."""

from __future__ import annotations

import sys
from pathlib import Path

from django.core.management.base import CommandError
from tqdm import tqdm

from accounts.models import Organisation
from lib.commands import CommandWithoutChecks
from memories.mem0 import mem0_import
from memories.transfer import FORMATS, ImportReport, MalformedFile, agent_named, memories_import, read_lines

PLACE_KINDS = ("dm", "private", "public")


class Command(CommandWithoutChecks):
    help = (
        "Import memories written by an agent: an Archivist export, a mem0 export (get_all output) or plain JSON "
        "lines of the export's shape. Every row passes the same rules as the API, and every row is checked "
        "before any is written: if one is refused, nothing is written and each refusal is listed as "
        "`line N: field: reason` (exit status 1); --partial writes the valid rows. Rows carry the `import` "
        "source kind. A mem0 export's memories land in each user_id's DM, as that person's facts (a directory "
        "person is created for a handle nobody has); rows without a user_id need --place, and --shared when "
        "others share that place."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", help="the file to read ('-' for standard input)")
        parser.add_argument("--org", required=True, help="the organisation's slug")
        parser.add_argument("--agent", required=True, help="the agent the memories are written by")
        parser.add_argument("--format", choices=FORMATS, default="archivist")
        parser.add_argument(
            "--place", help="CHANNEL:KIND[:person,person] for rows that name no place (mem0 rows of no user_id)"
        )
        parser.add_argument(
            "--shared",
            action="store_true",
            help="mem0: put the rows without a user_id in --place though others share it (refused for rows with one)",
        )
        parser.add_argument("--partial", action="store_true", help="write the valid rows even if some are refused")

    def handle(self, *args, file: str, org: str, agent: str, format: str, place: str | None, **options):
        organisation = Organisation.objects.filter(slug=org).first()
        if organisation is None:
            raise CommandError(f"No organisation with the slug {org!r}.")
        try:
            writer = agent_named(organisation=organisation, name=agent)
        except ValueError as error:
            raise CommandError(str(error)) from None
        default_place = self.parse_place(place) if place else None
        path = Path(file)
        if file != "-" and not path.is_file():
            raise CommandError(f"No file at {file}.")
        try:
            text = self.stdin_text() if file == "-" else path.read_text(encoding="utf-8")
        except UnicodeDecodeError as error:
            raise CommandError(f"{file} is not UTF-8 text: {error.reason} at byte {error.start}.") from None
        bar = tqdm(unit="rows", desc=f"import {format}", file=self.stderr)
        try:
            report = self.imported(organisation, writer, text, format, default_place, options, bar.update)
        except MalformedFile as error:
            raise CommandError(str(error)) from None
        finally:
            bar.close()
        self.summarise(report, partial=options["partial"])

    @staticmethod
    def imported(organisation, writer, text: str, format: str, place: dict | None, options: dict, progress):
        if format == "mem0":
            return mem0_import(
                organisation=organisation,
                agent=writer,
                text=text,
                place=place,
                shared=options["shared"],
                partial=options["partial"],
                progress=progress,
            )
        return memories_import(
            organisation=organisation,
            agent=writer,
            rows=list(read_lines(text.splitlines())),
            format=format,
            default_place=place,
            partial=options["partial"],
            progress=progress,
        )

    def summarise(self, report: ImportReport, *, partial: bool) -> None:
        """Each refusal (`line N: field: reason`), where the rows went, and the people created for them."""
        for refusal in report.errors:
            self.stderr.write(str(refusal))
        if report.people_created:
            self.stderr.write(
                f"Made {len(report.people_created)} directory people this organisation lacked: "
                f"{', '.join(report.people_created)}."
            )
        # Counts go to standard error, as the export's do, so standard output stays for data.
        self.stderr.write(
            f"Imported {report.created} memories ({report.superseded} as corrections of earlier rows); "
            f"{report.refused} refused."
        )
        for where, count in sorted(report.placed.items()):
            self.stderr.write(f"  {where}: {count}")
        if report.errors:
            written = "the valid rows were written" if partial else "nothing was written (--partial writes the rest)"
            raise CommandError(f"{report.refused} rows refused; {written}.", returncode=1)

    @staticmethod
    def parse_place(value: str) -> dict:
        channel, _, rest = value.partition(":")
        kind, _, people = rest.partition(":")
        if not channel or kind not in PLACE_KINDS:
            raise CommandError("--place is CHANNEL:KIND[:person,person] with KIND one of dm, private, public.")
        return {"channel": channel, "kind": kind, "people": [p for p in people.split(",") if p]}

    def stdin_text(self) -> str:
        return sys.stdin.read()
