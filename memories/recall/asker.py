"""Who asks in a place, and which facts are theirs: what a first-person question ("my sprint", "what did I
say") is about."""

# The asker is the one person a place names: a DM's person, or the one person a channel's turn names as
# asking. With several (or none) nobody is preferred. Their facts are those about them (the subject), and
# of transcript lines (`Name: text`, which are about whoever the place is with) those they spoke, told by
# the names a transcript calls them (display name, handle, username). The names are read per process and
# kept `NAMES_KEPT_SECONDS`, as the tenant's vector index is, so a recall pays no read for them: a renamed
# person's old lines keep the old name anyway.

from __future__ import annotations

from dataclasses import dataclass

from accounts.people import display_name_of, people_by_id
from lib.kept import KeptAnswers
from memories.models import SourceKind, SubjectType
from memories.scopes import Place

NAMES_KEPT_SECONDS = 30.0
_names_kept = KeptAnswers[frozenset[str]](NAMES_KEPT_SECONDS)


@dataclass(frozen=True)
class Asker:
    """The person asking (their account id) and the names transcript lines give them."""

    person: str
    names: frozenset[str]

    def owns(self, *, body: str, source_kind: str, subject_type: str, subject_id: str) -> bool:
        """Whether a fact is the asker's: a transcript line they spoke, or any other fact about them."""
        if source_kind == SourceKind.EPISODE:
            speaker, colon, _ = body.partition(": ")
            return bool(colon) and speaker in self.names
        return subject_type == SubjectType.USER and subject_id == self.person


def asker_of(*, organisation_id, place: Place) -> Asker | None:
    """The one person `place` names, with their names; None when it names several or none."""
    people = set(place.people)
    if len(people) != 1:
        return None
    person = str(next(iter(people)))
    names = _names_kept.get(f"{organisation_id}:{person}", lambda _: _names_of(organisation_id, person))
    return Asker(person=person, names=names)


def _names_of(organisation_id, person: str) -> frozenset[str]:
    membership = people_by_id(organisation=organisation_id, ids=[person]).get(person)
    if membership is None:
        return frozenset()
    return frozenset(
        name for name in (display_name_of(membership), membership.handle, membership.user.username) if name
    )


def names_forget() -> None:
    """Drop every kept name (tests that rename a person)."""
    _names_kept.forget()
