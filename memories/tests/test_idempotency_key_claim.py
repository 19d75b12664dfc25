"""An Idempotency-Key is claimed by one insert: a retry racing the first write waits for it, then replays it;
when the first write fails, the key is free again and the retry writes."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.models import Organisation
from lib.api.idempotency import idempotency_keys_expire, idempotent_call, key_model
from memories.models import IdempotencyKey
from memories.tests.test_remember_in_one_statement import second_waits_for_first


def call(org, write):
    return idempotent_call(
        organisation=org,
        principal="agent:bench",
        key="retry-1",
        endpoint="remember",
        fingerprint="same request",
        write=write,
        replay=lambda memory, extra: ("replayed", extra),
    )


def race(org, *, first_fails: bool):
    """The first call claims the key and, mid-write, the retry comes: what the retry answers."""
    claimed, go_on = threading.Event(), threading.Event()

    def first_write():
        claimed.set()
        go_on.wait(timeout=30)
        if first_fails:
            raise RuntimeError("the first write failed")
        return "first", None, {"by": "first"}

    def first():
        with transaction.atomic():
            call(org, first_write)

    def retry():
        claimed.wait(timeout=30)
        return call(org, lambda: ("retry", None, {"by": "retry"}))

    failed, answer = second_waits_for_first(first, retry, locktype="transactionid", release=go_on)
    assert isinstance(failed, RuntimeError) if first_fails else failed is None
    return answer


@pytest.mark.django_db(transaction=True)
def test_a_retry_racing_the_first_write_waits_and_replays_it(org):
    assert race(org, first_fails=False) == (("replayed", {"by": "first"}), True)
    assert IdempotencyKey.objects.get(key="retry-1").response_extra == {"by": "first"}


@pytest.mark.django_db(transaction=True)
def test_positive_control_when_the_first_write_fails_the_retry_writes(org):
    assert race(org, first_fails=True) == ("retry", False)
    assert IdempotencyKey.objects.get(key="retry-1").response_extra == {"by": "retry"}


@pytest.mark.django_db
def test_a_first_use_is_two_statements_and_a_replay_two_reads(org):
    with CaptureQueriesContext(connection) as first:
        call(org, lambda: ("first", None, {"by": "first"}))
    assert [query["sql"].split()[0] for query in first] == ["INSERT", "UPDATE"]
    with CaptureQueriesContext(connection) as replay:
        assert call(org, lambda: ("again", None, {})) == (("replayed", {"by": "first"}), True)
    assert [query["sql"].split()[0] for query in replay] == ["INSERT", "SELECT"]


def test_the_key_model_is_the_one_the_setting_names(settings):
    assert key_model() is IdempotencyKey
    settings.IDEMPOTENCY_KEY_MODEL = "accounts.Organisation"
    assert key_model() is Organisation


@pytest.mark.django_db
def test_keys_older_than_a_day_expire_and_newer_ones_stay(org):
    call(org, lambda: ("first", None, {}))
    now = timezone.now()
    assert idempotency_keys_expire(now=now) == 0
    assert IdempotencyKey.objects.filter(key="retry-1").exists()
    assert idempotency_keys_expire(now=now + timedelta(days=1, minutes=1)) == 1
    assert not IdempotencyKey.objects.filter(key="retry-1").exists()
