"""Rows the page tests share: a person's memories in each scope, written through the services."""

from __future__ import annotations

from dataclasses import dataclass

from memories.models import Author, Bucket, Channel, ChannelMember, Memory, Scope, SourceKind, SubjectType
from memories.tests.remembered import remembered

SCRIPT_BODY = (
    '<script>window.__pwned = 1</script> <img src=x onerror="window.__pwned = 2"> '
    "![tracker](https://evil.example/pixel.png) [click me](javascript:window.__pwned=3) <b>bold?</b>"
)


@dataclass
class Seeded:
    """What `seed_memories` wrote, by role."""

    person_fact: Memory  # about the person, in their person scope, inferred by an agent
    forgettable: Memory  # about the person, saved by them
    script: Memory  # a workspace fact whose body is markup
    workspace: Memory
    channel: Memory  # in a channel the person is in
    other_channel: Memory  # in a channel the person is not in
    others_fact: Memory  # another person's person fact


def channel_with(*, organisation, external_id: str, members, kind: str = Channel.Kind.PRIVATE) -> Channel:
    channel = Channel.objects.create(organisation=organisation, external_id=external_id, kind=kind)
    for user in members:
        ChannelMember.objects.create(organisation=organisation, channel=channel, user=user)
    return channel


def person_fact(*, organisation, person, body: str, agent=None, **fields) -> Memory:
    """A fact about `person`, kept in their person scope."""
    values = dict(
        organisation=organisation,
        bucket=Bucket.LEARNED if agent else Bucket.USER,
        author=Author.MODEL if agent else Author.PERSON,
        body=body,
        source_kind=SourceKind.MESSAGE if agent else SourceKind.PERSON,
        agent=agent,
        owner=None if agent else person,
        written_by=None if agent else person,
        subject_type=SubjectType.USER,
        subject_id=str(person.pk),
        scope=Scope.PERSON,
        scope_ref=str(person.pk),
        scope_label=person.username,
    )
    values.update(fields)
    return remembered(**values)


def shared_fact(*, organisation, body: str, agent=None, channel: Channel | None = None, **fields) -> Memory:
    """A workspace fact, or a channel fact when `channel` is given, inferred by `agent`."""
    values = dict(
        organisation=organisation,
        bucket=Bucket.LEARNED,
        author=Author.MODEL,
        body=body,
        source_kind=SourceKind.MESSAGE,
        agent=agent,
        scope=Scope.CHANNEL if channel else Scope.WORKSPACE,
        scope_ref=channel.external_id if channel else "",
        scope_label=channel.external_id if channel else "",
    )
    values.update(fields)
    return remembered(**values)


def seed_memories(*, organisation, person, other, agent) -> Seeded:
    """`person` sees all but the last two; `other` is a second member of the same organisation."""
    design = channel_with(organisation=organisation, external_id="design-room", members=[person])
    finance = channel_with(organisation=organisation, external_id="finance-room", members=[other])
    return Seeded(
        person_fact=person_fact(
            organisation=organisation,
            person=person,
            agent=agent,
            body="Prefers morning meetings before ten",
            source_ref="https://chat.example.com/archives/C42/p1700000000",
            source_label="#design-room message",
            source_run_id="run-8812",
        ),
        forgettable=person_fact(
            organisation=organisation, person=person, body="Is training for the Leeds half marathon"
        ),
        script=shared_fact(organisation=organisation, agent=agent, body=SCRIPT_BODY),
        workspace=shared_fact(organisation=organisation, agent=agent, body="The team ships releases on Thursdays"),
        channel=shared_fact(
            organisation=organisation, agent=agent, channel=design, body="The design review moved to Fridays"
        ),
        other_channel=shared_fact(
            organisation=organisation, agent=agent, channel=finance, body="Invoices are approved by the CFO"
        ),
        others_fact=person_fact(
            organisation=organisation, person=other, agent=agent, body="Is moving to Lisbon in May"
        ),
    )
