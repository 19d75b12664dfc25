"""`ArchivistMemoryTool`: a backend for Anthropic's `memory` tool that keeps its files as Archivist memories."""

# - `/memories/{scope}/...` is a memory of that scope (`workspace`, `channel` or `person`) in the place, found by
#   its source reference `memtool/{channel}/{scope}/...`; the file's text is the memory's body.
# - Every file says whom it is about, by its path, the way the LangGraph store's namespaces do:
#   - in a DM, `/memories/person/{name}` is about the DM's person (the place's record names them);
#   - elsewhere, `/memories/person/{handle}/{name}` is kept for that person alone (`only_for`) and is about them,
#     and a channel or workspace file sits in a subject folder: `/memories/channel/workspace/{name}` (an
#     operational note, about nobody), `/memories/channel/user:{handle}/{name}` or
#     `/memories/channel/candidate:{id}/{name}`. A file outside one is refused, naming `subject_type`: the tool
#     never chooses whom a fact is about for the model.
# - `view` lists the scope folders, a folder's files, or a file's numbered lines inside render's fence and
#   preamble, labelled as render labels a fact (invisible characters shown as marks, never dropped).
# - `create` remembers (a file over the body limit is refused, telling the model to split it); creating an
#   existing file supersedes it. `str_replace` and `insert` supersede (the history is kept), `delete` forgets
#   (a receipt stays), `rename` within a scope and subject supersedes under the new name.
# - What cannot map is refused with a message the model can act on: a scope the place does not write (a DM
#   keeps only person memories), a rename across scopes or subjects, paths outside `/memories`.
#
# Install with `pip install "archivist-client[anthropic]"`.

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from anthropic.lib.tools import BetaAbstractMemoryTool, ToolError
from anthropic.types.beta import (
    BetaMemoryTool20250818CreateCommand,
    BetaMemoryTool20250818DeleteCommand,
    BetaMemoryTool20250818InsertCommand,
    BetaMemoryTool20250818RenameCommand,
    BetaMemoryTool20250818StrReplaceCommand,
    BetaMemoryTool20250818ViewCommand,
)

from archivist_client.client import Archivist
from archivist_client.errors import ArchivistError
from archivist_client.models import Memory, Place
from archivist_client.text import FENCE_CLOSE, FENCE_OPEN, PREAMBLE, escape, label, neutralise

ROOT = "/memories"
SCOPES = ("workspace", "channel", "person")
BODY_MAX_CHARS = 2000
SOURCE_REF_MAX_CHARS = 200
# Where each kind of place keeps what is written there (memories/scopes.py: the narrowest scope it allows).
# Outside a DM a person file names its person by a folder (`/memories/person/{handle}/...`).
WRITABLE = {"dm": ("person",), "private": ("channel", "person"), "public": ("channel", "workspace", "person")}
SUBJECT_FOLDERS = "workspace, user:{handle} or candidate:{id}"
_NAME = re.compile(r"^[^\x00-\x1f\x7f]+$")


class ArchivistMemoryTool(BetaAbstractMemoryTool):
    """The memory tool's six commands over Archivist, for one place."""

    def __init__(
        self,
        client: Archivist | None = None,
        *,
        place: Place | Mapping[str, Any],
        base_url: str | None = None,
        token: str | None = None,
        cache_control=None,
    ):
        super().__init__(cache_control=cache_control)
        self.place = place.model_dump() if isinstance(place, Place) else Place.model_validate(dict(place)).model_dump()
        self.client = client or Archivist(base_url, token, place=self.place)
        self.prefix = f"memtool/{quote(self.place['channel'], safe='')}/"

    # --- paths ----------------------------------------------------------------------------

    def _parts(self, path: str) -> tuple[str | None, str]:
        """(scope, name within it) for a path; (None, "") for the root."""
        if path != ROOT and not path.startswith(ROOT + "/"):
            raise ToolError(f"Paths start with {ROOT}, e.g. {ROOT}/channel/notes.md; got {path!r}.")
        rest = path[len(ROOT) :].strip("/")
        if not rest:
            return None, ""
        scope, _, name = rest.partition("/")
        if scope not in SCOPES:
            raise ToolError(f"{ROOT} holds the folders {', '.join(SCOPES)}; {scope!r} is not one of them.")
        if ".." in name.split("/") or (name and not _NAME.match(name)):
            raise ToolError(f"{path!r} is not a file name this tool accepts.")
        return scope, name

    def _ref(self, scope: str, name: str) -> str:
        ref = f"{self.prefix}{scope}/{name}"
        if len(ref) > SOURCE_REF_MAX_CHARS:
            room = SOURCE_REF_MAX_CHARS - len(self.prefix) - len(scope) - 1
            raise ToolError(f"The path is too long to keep; use a name of at most {room} characters.")
        return ref

    def _path(self, memory: Memory) -> str:
        return f"{ROOT}/{memory.source.ref[len(self.prefix) :]}"

    def _files(self, scope: str | None = None, under: str = "") -> list[Memory]:
        start = self.prefix + (f"{scope}/" if scope else "") + (f"{under.rstrip('/')}/" if under else "")
        rows = self.client.list(place=self.place, state="live", page_size=200, source_ref_prefix=start)
        return [row for row in rows if row.source.ref.startswith(start)]

    def _file(self, path: str) -> Memory | None:
        scope, name = self._parts(path)
        if scope is None or not name:
            return None
        ref = self._ref(scope, name)
        for row in self.client.list(place=self.place, state="live", page_size=10, source_ref=ref):
            if row.source.ref == ref:
                return row
        return None

    def _existing(self, path: str) -> Memory:
        found = self._file(path)
        if found is None:
            raise ToolError(f"There is no file at {path}. View {ROOT} to see what there is.")
        return found

    def _writable(self, scope: str) -> None:
        allowed = WRITABLE[self.place["kind"]]
        if scope not in allowed:
            where = " or ".join(f"{ROOT}/{name}" for name in allowed)
            raise ToolError(
                f"In this {self.place['kind']} place memories are kept in {where}, not {ROOT}/{scope}; write there."
            )

    def _attribution(self, scope: str, name: str) -> dict[str, str]:
        """Whom the file at `scope`/`name` is about, as remember's fields; refused when its path does not say."""
        if self.place["kind"] == "dm":
            return {}  # the DM's record names its person
        folder, _, rest = name.partition("/")
        if scope == "person":
            if not rest:
                raise ToolError(
                    f"Outside a DM a person file names its person: write {ROOT}/person/HANDLE/{name}, "
                    "with the handle of the person it is kept for."
                )
            return {"only_for": folder}
        kind, _, subject_id = folder.partition(":")
        if rest and folder == "workspace":
            return {"subject_type": "workspace"}
        if rest and kind in ("user", "candidate") and subject_id:
            return {"subject_type": kind, "subject_id": subject_id}
        raise ToolError(
            f"subject_type: say whom this file is about with its folder: {ROOT}/{scope}/workspace/{name} for an "
            f"operational note, {ROOT}/{scope}/user:HANDLE/{name} for a person, or {ROOT}/{scope}/candidate:ID/{name} "
            "for a candidate."
        )

    def _supersede(self, memory: Memory, body: str) -> Memory:
        # A correction's source reference would otherwise name the version it replaces; the file keeps its path.
        return self.client.correct(memory.id, body=body, place=self.place, source_ref=memory.source.ref)

    @staticmethod
    def _fits(text: str) -> None:
        if len(text) > BODY_MAX_CHARS:
            raise ToolError(
                f"The file would be {len(text)} characters; a memory holds at most {BODY_MAX_CHARS}. "
                "Split it into several files, each one fact or topic."
            )

    def _call(self, work):
        try:
            return work()
        except ArchivistError as error:
            raise ToolError(f"Archivist refused: {error}") from error

    # --- commands -------------------------------------------------------------------------

    def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        scope, name = self._parts(command.path)
        if scope is None:
            counts = dict.fromkeys(SCOPES, 0)
            for row in self._call(self._files):
                counts[row.source.ref[len(self.prefix) :].split("/", 1)[0]] += 1
            lines = [f"Directory {ROOT} (place {self.place['channel']}, {self.place['kind']}):"]
            lines += [
                f"- {ROOT}/{s}/ ({counts[s]} files{'' if s in WRITABLE[self.place['kind']] else ', read-only here'})"
                for s in SCOPES
            ]
            return "\n".join(lines)
        memory = self._call(lambda: self._file(command.path)) if name else None
        if memory is None:
            files = self._call(lambda: self._files(scope, name))
            if name and not files:
                raise ToolError(f"There is no file or folder at {command.path}.")
            lines = [f"Directory {command.path}:"]
            lines += [f"- {self._path(row)} ({len(row.body)} characters; {label(row)})" for row in files]
            return "\n".join(lines) if files else f"Directory {command.path} is empty."
        numbered = list(enumerate(memory.body.split("\n"), start=1))
        if command.view_range:
            first, last = command.view_range[0], command.view_range[-1]
            last = len(numbered) if last == -1 else last
            numbered = [(n, line) for n, line in numbered if first <= n <= last]
        # The file is memory a model reads, so it gets render's fence, preamble and label; each line keeps its
        # spacing (str_replace matches it) but shows invisible characters as marks and cannot close the fence.
        lines = (f"{n:6}\t{escape(neutralise(line))}" for n, line in numbered)
        return "\n".join(
            [f"File {command.path}:", FENCE_OPEN, PREAMBLE, "", f"- [{label(memory)}]", *lines, FENCE_CLOSE]
        )

    def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        scope, name = self._parts(command.path)
        if scope is None or not name:
            raise ToolError(f"Create a file inside a scope folder, e.g. {ROOT}/channel/notes.md.")
        self._writable(scope)
        about = self._attribution(scope, name)
        self._fits(command.file_text)
        existing = self._call(lambda: self._file(command.path))
        if existing is not None:
            new = self._call(lambda: self._supersede(existing, command.file_text))
            return f"File {command.path} replaced (memory {new.id}; the earlier version is kept in its history)."
        ref = self._ref(scope, name)
        row = self._call(
            lambda: self.client.remember(
                body=command.file_text,
                place=self.place,
                scope=scope,
                source_kind="run",
                source_ref=ref,
                **about,
            )
        )
        if row.scope != scope:
            self._call(lambda: self.client.forget(row.id, reason="written to the wrong scope folder", place=self.place))
            raise ToolError(
                f"Archivist keeps this as a {row.scope} memory ({row.scope_reason}); write it under {ROOT}/{row.scope}."
            )
        return f"File created successfully at {command.path} (memory {row.id})."

    def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        memory = self._call(lambda: self._existing(command.path))
        count = memory.body.count(command.old_str)
        if count == 0:
            raise ToolError(f"No replacement was made: the text was not found in {command.path}.")
        if count > 1:
            raise ToolError(f"The text appears {count} times in {command.path}; include more of it so it is unique.")
        body = memory.body.replace(command.old_str, command.new_str, 1)
        self._fits(body)
        new = self._call(lambda: self._supersede(memory, body))
        return f"The memory file has been edited (memory {new.id}; the earlier version is kept in its history)."

    def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        memory = self._call(lambda: self._existing(command.path))
        lines = memory.body.split("\n")
        if not 0 <= command.insert_line <= len(lines):
            raise ToolError(f"insert_line must be between 0 and {len(lines)} for {command.path}.")
        lines[command.insert_line : command.insert_line] = command.insert_text.rstrip("\n").split("\n")
        body = "\n".join(lines)
        self._fits(body)
        new = self._call(lambda: self._supersede(memory, body))
        return f"Text inserted at line {command.insert_line} in {command.path} (memory {new.id})."

    def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        scope, name = self._parts(command.path)
        if scope is None:
            raise ToolError(f"{ROOT} itself cannot be deleted; delete files or a scope folder's files.")
        memory = self._call(lambda: self._file(command.path)) if name else None
        rows = [memory] if memory is not None else self._call(lambda: self._files(scope, name))
        if not rows:
            raise ToolError(f"There is no file or folder at {command.path}.")
        for row in rows:
            self._call(
                lambda row=row: self.client.forget(row.id, reason="deleted by the memory tool", place=self.place)
            )
        return f"Deleted {command.path} ({len(rows)} memories forgotten; a receipt of each stays)."

    def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        old_scope, old_name = self._parts(command.old_path)
        new_scope, new_name = self._parts(command.new_path)
        if not old_name or not new_name:
            raise ToolError("Rename files, not folders: name a file in both old_path and new_path.")
        if old_scope != new_scope:
            raise ToolError(
                f"A memory's scope cannot change: {ROOT}/{old_scope} files stay in {ROOT}/{old_scope}. "
                f"To keep it as a {new_scope} memory, create {command.new_path} with its text, then delete "
                f"{command.old_path}."
            )
        if self._attribution(old_scope, old_name) != self._attribution(new_scope, new_name):
            raise ToolError(
                f"A memory's subject cannot change: {command.old_path} and {command.new_path} name different "
                "people or subjects. Create the new file with its text, then delete the old one."
            )
        memory = self._call(lambda: self._existing(command.old_path))
        if self._call(lambda: self._file(command.new_path)) is not None:
            raise ToolError(f"{command.new_path} already exists; delete it first or choose another name.")
        ref = self._ref(new_scope, new_name)
        self._call(lambda: self.client.correct(memory.id, body=memory.body, place=self.place, source_ref=ref))
        return f"Renamed {command.old_path} to {command.new_path}."

    def clear_all_memory(self) -> str:
        rows = self._call(self._files)
        for row in rows:
            self._call(lambda row=row: self.client.forget(row.id, reason="memory tool cleared", place=self.place))
        return f"Cleared {len(rows)} memories of this place (a receipt of each stays)."
