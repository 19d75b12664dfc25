"""`manage.py reembed`: move every live memory to the current embedding model, with a progress bar."""

from __future__ import annotations

from django.core.management.base import CommandError
from tqdm import tqdm

from lib.commands import CommandWithoutChecks
from memories.embeddings.embedders import get_embedder
from memories.embeddings.writes import EmbedOutcome, memories_reembed
from memories.tasks import reembed_memories


class Command(CommandWithoutChecks):
    help = (
        "Embed every live memory whose vector is missing or from another model, in batches. "
        "Recall keeps serving while it runs: lexically at once, semantically as rows are done."
    )

    def add_arguments(self, parser):
        parser.add_argument("--batch-size", type=int, default=None, help="rows per batch (default: the setting)")
        parser.add_argument("--enqueue", action="store_true", help="hand the work to a worker instead of doing it here")

    def handle(self, *args, batch_size: int | None = None, enqueue: bool = False, **options):
        embedder = get_embedder()
        if not embedder.available:
            raise CommandError("No embedder is configured (ARCHIVIST_EMBEDDER=none); there is nothing to embed with.")
        if batch_size is not None and batch_size < 1:
            raise CommandError("--batch-size must be at least 1.")
        if enqueue:
            reembed_memories.apply_async(queue="maintenance")
            self.stdout.write("Queued a re-embedding task on the maintenance queue.")
            return
        bar = tqdm(total=0, unit="rows", desc=f"reembed → {embedder.name}", file=self.stderr)

        def progress(done: int, total: int, outcome: EmbedOutcome) -> None:
            bar.total = total
            bar.n = done
            bar.set_postfix(embedded=len(outcome.embedded), failed=len(outcome.failed), refresh=False)
            bar.refresh()

        outcome = memories_reembed(batch_size=batch_size, progress=progress)
        bar.close()
        self.stdout.write(
            f"Embedded {len(outcome.embedded)} memories with {embedder.name}; "
            f"{outcome.already_embedded} were already done, {len(outcome.failed)} failed."
        )
        if outcome.failed:
            sample = next(iter(outcome.failed.values()))
            self.stdout.write(f"The failed rows show in admin as not yet searchable; first error: {sample}")
