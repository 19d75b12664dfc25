"""Who a memory is for: recall, writing, seeing and changing each follow the audience."""

# Pure rules, one function each, with no database access, so they can be tested
# adversarially and reused by the SQL that enforces them (`memories.recall.query`) and
# by the pages that show memories to people.
#
# - **Recall.** A workspace fact is recalled anywhere, a channel fact only in its
#   channel, a person fact only in a DM with exactly that person. Nothing said in
#   a private place reaches an audience that could not read it there.
# - **Writing.** A write goes to the narrowest scope the place allows: a DM with
#   one person is that person's, anything else is that channel's, and only a
#   public channel (which every member reads already) may write a workspace fact.
#   `only_for` keeps a fact for one person wherever it was learned.
# - **Seeing and changing** follow recall. Workspace facts are changed by owners;
#   a person's facts are theirs alone and owners do not see them.
#
# People are named by account id (a string) everywhere in these rules: a username
# can be renamed and then reused, and a person fact must never follow the name to
# a new holder.

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

WORKSPACE = "workspace"
CHANNEL = "channel"
PERSON = "person"
SCOPES = (WORKSPACE, CHANNEL, PERSON)
# Widest first: the order paragraphs are rendered in. Precedence runs the other way.
SCOPE_ORDER = (WORKSPACE, CHANNEL, PERSON)

PLACE_KINDS = ("dm", "private", "public")
SYSTEM_BUCKET = "system"


@dataclass(frozen=True)
class Place:
    """Where a turn happens: a channel id, its kind, and the account ids of the people in it.

    For a DM or a private channel `people` is the whole audience; for a public
    channel it is whoever asked.
    """

    channel: str
    kind: str
    people: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in PLACE_KINDS:
            raise ValueError(f"place kind must be one of {', '.join(PLACE_KINDS)}, not {self.kind!r}")
        if not self.channel:
            raise ValueError("a place needs a channel id")
        object.__setattr__(self, "people", tuple(self.people))


class ScopedRow(Protocol):
    scope: str
    scope_ref: str


def solo_person(place: Place) -> str | None:
    """The one person a DM is with, when it is with exactly one, else None."""
    if place.kind == "dm" and len(set(place.people)) == 1:
        return place.people[0]
    return None


def recallable(memory: ScopedRow, place: Place) -> bool:
    """Whether a fact may be recalled (or rendered) in this place."""
    if getattr(memory, "bucket", None) == SYSTEM_BUCKET:
        return False  # system claims reach a turn only through their own plane
    if memory.scope == WORKSPACE:
        return True
    if memory.scope == CHANNEL:
        return memory.scope_ref == place.channel
    if memory.scope == PERSON:
        return solo_person(place) == memory.scope_ref
    return False


@dataclass(frozen=True)
class ScopeChoice:
    """The scope a write goes to, and why it differs from the one asked for (empty when it does not)."""

    scope: str
    ref: str
    reason: str = ""

    def honours(self, wanted: str | None) -> bool:
        return wanted is None or wanted == self.scope


def scope_for(place: Place, wanted: str | None = None, only_for: str | None = None) -> ScopeChoice:
    """The narrowest scope this place allows for a write; `wanted` is granted only where it fits.

    `only_for` is an account id: what was learned is kept as that person's alone,
    wherever the turn happens.
    """
    if wanted is not None and wanted not in SCOPES:
        raise ValueError(f"scope must be one of {', '.join(SCOPES)}, not {wanted!r}")
    if only_for:
        reason = "" if wanted in (None, PERSON) else f"only_for keeps it for one person, so not {wanted} scope"
        return ScopeChoice(PERSON, only_for, reason)
    if wanted == WORKSPACE and place.kind == "public":
        return ScopeChoice(WORKSPACE, "")
    person = solo_person(place)
    if person and wanted != CHANNEL:
        reason = ""
        if wanted == WORKSPACE:
            reason = "only a public channel may write a workspace fact; kept for the one person in this DM"
        return ScopeChoice(PERSON, person, reason)
    reason = ""
    if wanted == WORKSPACE:
        reason = f"only a public channel may write a workspace fact; kept in this {place.kind} channel"
    elif wanted == PERSON:
        reason = "a person fact is written only in a DM with exactly one person, or with only_for"
    return ScopeChoice(CHANNEL, place.channel, reason)


@dataclass(frozen=True)
class Viewer:
    """Whoever looks at memories outside a turn: an account holder, or an agent.

    `channels` are the external ids of the channels the person is a member of.
    An agent has no account; it sees what it holds, the shared workspace facts,
    and, when it names the place of its turn, what is recallable there.
    """

    user_id: str | None = None
    is_owner: bool = False
    channels: frozenset[str] = field(default_factory=frozenset)
    agent_id: str | None = None
    place: Place | None = None


def _held_by(memory, agent_id: str | None) -> bool:
    held = getattr(memory, "agent_id", None)
    return held is not None and agent_id is not None and str(held) == str(agent_id)


def _shared_with(memory, agent_id: str | None) -> bool:
    held = getattr(memory, "agent_id", None)
    return held is None or _held_by(memory, agent_id)


def visible_to(memory: ScopedRow, viewer: Viewer) -> bool:
    """Whether the viewer may see this fact (its receipt, once erased)."""
    if getattr(memory, "bucket", None) == SYSTEM_BUCKET:
        return False
    if viewer.agent_id is not None:
        if _held_by(memory, viewer.agent_id):
            return True
        if not _shared_with(memory, viewer.agent_id):
            return False
        if memory.scope == WORKSPACE:
            return True
        return viewer.place is not None and recallable(memory, viewer.place)
    if viewer.user_id is None:
        return False
    if memory.scope == PERSON:
        return memory.scope_ref == viewer.user_id
    # Saving a channel fact gives no lasting claim on it: it is seen while the record lets them read the channel.
    if memory.scope == WORKSPACE:
        return True
    if memory.scope == CHANNEL:
        return memory.scope_ref in viewer.channels
    return False


def agent_sees(memory: ScopedRow, *, agent_id: str, place: Place) -> bool:
    """What an agent reads outside a turn (a list, one memory): what it could have recalled in the place it
    serves, its own rows or those no agent holds, whose scope reaches that place. Seeing follows recall."""
    return _shared_with(memory, agent_id) and recallable(memory, place)


def changeable_by(memory: ScopedRow, viewer: Viewer) -> bool:
    """Whether the viewer may correct, pin or forget this fact."""
    if not visible_to(memory, viewer):
        return False
    if viewer.agent_id is not None:
        if _held_by(memory, viewer.agent_id):
            return True
        # Shared workspace facts are the owners' to change, never an agent's.
        return memory.scope != WORKSPACE
    if memory.scope == WORKSPACE:
        return viewer.is_owner
    return True


def subject_request_allowed(*, viewer: Viewer, subject_type: str, subject_id: str, action: str) -> bool:
    """Who may export (`export`) or erase (`erase`) everything held about a subject.

    A person's data is theirs: only they export it. Owners may erase it (the
    answer is counts and receipts, never the content). Candidates are the
    organisation's business: owners and agents handle their requests. An agent
    never erases an account holder's data: a token is not that person.
    """
    if action not in ("export", "erase"):
        raise ValueError(f"unknown subject action {action!r}")
    if subject_type == "user":
        if viewer.user_id is not None and viewer.user_id == subject_id:
            return True
        return action == "erase" and viewer.is_owner
    if subject_type == "candidate":
        return viewer.is_owner or viewer.agent_id is not None
    return False
