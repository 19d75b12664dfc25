"""A remember's write is one round trip: the cap's lock, then the count, the row and its receipt in one statement.

Exact under concurrency: writers at the cap get exactly the room through, and a writer that waited for the
cap's lock counts what the writer before it committed (the count is a statement after the lock's).
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from lib.inserts import insert_statement
from memories.errors import LimitReached
from memories.models import Author, Bucket, IdempotencyKey, Memory, MemoryAudit, SourceKind
from memories.tests.remembered import remembered
from memories.tests.test_live_fact_caps import agent_fact
from threads.conflicts import user_fact_keys_write
from threads.models import Learning


def in_own_connection(work):
    """Run `work()` on this thread's own database connection, closed after."""
    try:
        return work()
    finally:
        connection.close()


def waiting_on(locktype: str) -> int:
    """How many sessions of this test's database wait on a lock of this type (advisory, transactionid) now: the
    cluster is shared with the suite's other workers."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_locks JOIN pg_stat_activity USING (pid)"
            " WHERE locktype = %s AND NOT granted AND datname = current_database()",
            [locktype],
        )
        return cursor.fetchone()[0]


def second_waits_for_first(first, second, *, locktype: str, release: threading.Event):
    """`first` and `second` on their own connections; once `second` waits on a lock of `locktype`, `release` lets
    `first` end. Returns (what `first` raised or None, what `second` returned)."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        first_done = pool.submit(in_own_connection, first)
        second_done = pool.submit(in_own_connection, second)
        for _ in range(300):
            if waiting_on(locktype):
                break
            time.sleep(0.02)
        assert waiting_on(locktype) == 1, f"the second should wait on the first's {locktype} lock"
        release.set()
        return first_done.exception(timeout=30), second_done.result(timeout=30)


@pytest.mark.django_db
def test_a_remember_is_one_statement_with_its_receipt(agent):
    with CaptureQueriesContext(connection) as statements:
        memory = agent_fact(agent, "The stand-up is at nine")
    assert len(statements) == 1
    assert statements[0]["sql"].startswith("SELECT pg_advisory_xact_lock")
    assert MemoryAudit.objects.filter(memory=memory, action=MemoryAudit.Action.REMEMBER).count() == 1
    assert Memory.objects.get(pk=memory.pk).body == "The stand-up is at nine"
    assert not memory._state.adding  # saved, as save() leaves it


@pytest.mark.django_db
def test_a_refused_write_leaves_no_row_no_receipt_and_the_transaction_usable(agent, settings):
    settings.MEMORY_MAX_LIVE_FACTS_PER_AGENT = 1
    agent_fact(agent, "one")
    with pytest.raises(LimitReached):
        agent_fact(agent, "two")
    # Positive control first: the row that fit has its receipt; the refused one has neither.
    assert MemoryAudit.objects.filter(memory__body="one").count() == 1
    assert not Memory.objects.filter(body="two").exists()
    assert MemoryAudit.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_concurrent_writers_at_the_cap_get_exactly_the_room_through(agent, settings):
    settings.MEMORY_MAX_LIVE_FACTS_PER_AGENT = 5
    for index in range(3):
        agent_fact(agent, f"held {index}")
    start = threading.Barrier(8)

    def write(index: int) -> str:
        def attempt():
            start.wait()
            try:
                agent_fact(agent, f"racing {index}")
            except LimitReached:
                return "refused"
            return "written"

        return in_own_connection(attempt)

    with ThreadPoolExecutor(max_workers=8) as pool:
        outcomes = list(pool.map(write, range(8)))
    assert outcomes.count("written") == 2 and outcomes.count("refused") == 6
    assert Memory.objects.filter(agent=agent).count() == 5
    assert MemoryAudit.objects.filter(memory__agent=agent).count() == 5


def _second_writer_after_the_first_commits(agent) -> str:
    """The first writer holds the cap's lock with its row not yet committed; the second waits for the lock,
    then the first commits: what the second's write does."""
    first_wrote, first_may_commit = threading.Event(), threading.Event()

    def first():
        with transaction.atomic():
            agent_fact(agent, "first")
            first_wrote.set()
            first_may_commit.wait(timeout=30)

    def second() -> str:
        first_wrote.wait(timeout=30)
        try:
            agent_fact(agent, "second")
        except LimitReached:
            return "refused"
        return "written"

    failed, second_did = second_waits_for_first(first, second, locktype="advisory", release=first_may_commit)
    assert failed is None
    return second_did


@pytest.mark.django_db(transaction=True)
def test_a_writer_that_waited_for_the_lock_counts_what_committed_before_it(agent, settings):
    settings.MEMORY_MAX_LIVE_FACTS_PER_AGENT = 1
    assert _second_writer_after_the_first_commits(agent) == "refused"
    assert list(Memory.objects.filter(agent=agent).values_list("body", flat=True)) == ["first"]


@pytest.mark.django_db(transaction=True)
def test_positive_control_with_room_for_both_the_waiting_writer_writes(agent, settings):
    settings.MEMORY_MAX_LIVE_FACTS_PER_AGENT = 2
    assert _second_writer_after_the_first_commits(agent) == "written"
    assert Memory.objects.filter(agent=agent).count() == 2


def orm_insert(row):
    """The ORM's own compiled INSERT of one row (what `save()` sends, without its RETURNING)."""
    from django.db.models.constants import OnConflict
    from django.db.models.sql import InsertQuery

    meta = row._meta
    fields = [f for f in meta.local_concrete_fields if not f.generated and (f is not meta.auto_field or row.pk)]
    query = InsertQuery(type(row), on_conflict=OnConflict.IGNORE if isinstance(row, IdempotencyKey) else None)
    query.insert_values(fields, [row])
    [(sql, params)] = query.get_compiler(connection=connection).as_sql()
    return sql, list(params)


def shown(params: list) -> list[str]:
    """Parameters compared: the automatic times are set anew by each statement made, so only their type."""
    return [type(value).__name__ if isinstance(value, datetime) else str(value) for value in params]


@pytest.mark.django_db
def test_the_insert_made_once_is_the_orms_for_each_row_written_so(agent):
    learned = {"bucket": Bucket.LEARNED, "author": Author.MODEL, "source_kind": SourceKind.MESSAGE}
    memory = Memory(organisation=agent.organisation, agent=agent, body="Lunch at noon", **learned)
    receipt = MemoryAudit(organisation=agent.organisation, memory=memory, action="remember", actor_label="agent:x")
    key = IdempotencyKey(organisation=agent.organisation, principal="p", key="k", endpoint="e", request_sha256="s")
    for row, ignore_conflicts in ((memory, False), (receipt, False), (key, True)):
        made_once = insert_statement(row, ignore_conflicts=ignore_conflicts)
        assert made_once[0] == orm_insert(row)[0]
        assert shown(made_once[1]) == shown(orm_insert(row)[1])
    assert memory.created_at is not None and receipt.at is not None  # set on the row, as save() sets them


@pytest.mark.django_db
def test_an_expression_is_refused_by_the_made_once_insert_and_plain_values_pass(agent):
    from django.db.models import Value
    from django.db.models.functions import Upper

    fields = dict(organisation=agent.organisation, memory_id=agent.pk, action="remember")
    assert insert_statement(MemoryAudit(**fields, actor_label="agent:x"))  # the positive control: plain values
    with pytest.raises(ValueError, match="not a plain value"):
        insert_statement(MemoryAudit(**fields, actor_label=Upper(Value("agent:x"))))


def person_fact(member, *, about, body: str) -> Memory:
    return remembered(
        organisation=member.memberships.first().organisation,
        bucket=Bucket.USER,
        author=Author.PERSON,
        source_kind=SourceKind.PERSON,
        owner=member,
        written_by=member,
        subject_type="user",
        subject_id=str(about.pk),
        body=body,
    )


def users_read(statements) -> int:
    return sum('FROM "accounts_user"' in query["sql"] for query in statements.captured_queries)


@pytest.mark.django_db
def test_a_persons_own_fact_gets_its_key_without_reading_the_writer_again(member):
    with CaptureQueriesContext(connection) as own:
        mine = person_fact(member, about=member, body="I prefer tea")
    assert users_read(own) == 0
    assert Learning.objects.get(memory=mine).key == "prefers:tea"
    # The positive control: a fact whose writer is not in hand (read back from the table) reads the name once.
    unkeyed = person_fact(member, about=member, body="Hello there")
    with CaptureQueriesContext(connection) as reread:
        user_fact_keys_write(memories=[Memory.objects.get(pk=unkeyed.pk)])
    assert users_read(reread) == 1
