"""The same scope properties against the real recall SQL: whatever the generated rows and place,
recall returns exactly the live rows `recallable` allows, and nothing of another tenant or agent."""

from __future__ import annotations

import itertools
from datetime import timedelta

from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accounts.services import agent_create, organisation_create
from memories.models import Author, Bucket, Memory, SourceKind
from memories.recall.query import recall
from memories.scopes import Place, recallable

_examples = itertools.count()
PEOPLE = ["11111111-1111-1111-1111-111111111111", "22222222-2222-2222-2222-222222222222"]
CHANNELS = ["c1", "c2", "d1"]

row_specs = st.lists(
    st.tuples(
        st.sampled_from(["workspace", "channel", "person"]),
        st.sampled_from(CHANNELS),
        st.sampled_from(PEOPLE),
        st.sampled_from(["live", "erased", "expired", "superseded"]),
        st.sampled_from(["mine", "shared", "other-agent", "other-tenant"]),
    ),
    min_size=1,
    max_size=25,
)
places = st.builds(
    Place,
    channel=st.sampled_from(CHANNELS),
    kind=st.sampled_from(["dm", "private", "public"]),
    people=st.lists(st.sampled_from(PEOPLE), max_size=2).map(tuple),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(specs=row_specs, place=places, mode=st.sampled_from(["recent", "lexical"]))
def test_recall_returns_exactly_the_recallable_live_rows(db, specs, place, mode):
    # Each example gets fresh tenants: rows of earlier examples live on in the test's transaction,
    # and must not be returned either.
    serial = next(_examples)
    org = organisation_create(slug=f"org-{serial}")
    other = organisation_create(slug=f"other-{serial}")
    mine, _ = agent_create(organisation=org, name="mine")
    theirs, _ = agent_create(organisation=org, name="theirs")
    now = timezone.now()
    expected = set()
    rows = []
    for index, (scope, channel, person, state, holder) in enumerate(specs):
        ref = {"workspace": "", "channel": channel, "person": person}[scope]
        row = Memory(
            organisation=other if holder == "other-tenant" else org,
            agent={"mine": mine, "other-agent": theirs}.get(holder),
            bucket=Bucket.LEARNED,
            author=Author.MODEL,
            source_kind=SourceKind.MESSAGE,
            body=f"alpha fact {index}",
            scope=scope,
            scope_ref=ref,
            subject_type="workspace",
            expires_at=now - timedelta(minutes=1) if state == "expired" else now + timedelta(days=1),
        )
        if state == "erased":
            row.body, row.redacted_at = "", now
        rows.append((row, state))
    replacement = Memory(
        organisation=org,
        bucket=Bucket.LEARNED,
        author=Author.MODEL,
        source_kind=SourceKind.MESSAGE,
        body="",
        redacted_at=now,
        expires_at=now + timedelta(days=1),
    )
    Memory.objects.bulk_create([replacement] + [row for row, _ in rows])
    Memory.objects.filter(pk__in=[row.pk for row, state in rows if state == "superseded"]).update(
        superseded_by=replacement
    )
    for row, _state in rows:
        row.refresh_from_db()
        live = row.redacted_at is None and row.superseded_by_id is None and row.expires_at > now
        if (
            live
            and row.organisation_id == org.pk
            and row.agent_id in (None, mine.pk)
            and recallable(row, place)
            and (mode == "recent" or row.body)
        ):
            expected.add(row.pk)

    result = recall(organisation=org, place=place, question="alpha", mode=mode, limit=40, agent=mine, now=now)
    returned = {row["id"] for row in result.rows}
    assert returned == expected
    for row in result.rows:
        assert recallable(_Scoped(row), place)


class _Scoped:
    def __init__(self, row: dict):
        self.scope = row["scope"]
        self.scope_ref = row["scope_ref"]
        self.bucket = row["bucket"]
