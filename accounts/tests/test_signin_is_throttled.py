"""Guessing passwords is throttled: failures count per account and address together, on the
account pages and the admin; a locked-out sign-in is refused with a clear page, even with the
right password, until the cool-off has passed since the last attempt."""

from __future__ import annotations

from datetime import timedelta

import pytest
import redis
import time_machine
from axes.handlers.proxy import AxesProxyHandler
from django.conf import settings as django_settings
from django.core.cache import caches
from django.urls import reverse

pytestmark = pytest.mark.django_db

GUESSER = "203.0.113.7"
NEIGHBOUR = "203.0.113.8"
LOGIN = "/accounts/login/"
ADMIN_LOGIN = "/admin/login/"


@pytest.fixture
def handler_for():
    """Rebuild axes' memoised handler when a test changes the cache it counts in."""

    def rebuild():
        AxesProxyHandler.get_implementation(force=True)

    yield rebuild
    # Built again on its next use, from the settings then: this teardown runs before `settings` is restored.
    AxesProxyHandler.implementation = None


def sign_in(client, username: str, password: str, *, address: str, url: str = LOGIN):
    return client.post(url, {"username": username, "password": password}, REMOTE_ADDR=address)


def signed_in(client) -> bool:
    return "_auth_user_id" in client.session


def test_forty_wrong_passwords_then_the_right_one_is_refused_with_the_message(client, member):
    limit = django_settings.AXES_FAILURE_LIMIT
    statuses = [sign_in(client, "mona", f"guess-{n}", address=GUESSER).status_code for n in range(40)]
    assert statuses[: limit - 1] == [400] * (limit - 1)  # each a wrong password, said as ever
    assert set(statuses[limit - 1 :]) == {429}, statuses
    response = sign_in(client, "mona", "pw-mona-123", address=GUESSER)
    assert response.status_code == 429
    page = response.content.decode()
    assert "Too many failed sign-ins" in page and "mona" in page
    assert f"after {limit} wrong passwords" in page and "15 minutes" in page
    assert not signed_in(client)
    # The count is in the shared Redis, expiring with the cool-off (every web worker sees it).
    shared = redis.Redis.from_url(django_settings.CACHES["signin"]["LOCATION"])
    keys = list(shared.scan_iter("signin:*"))
    assert keys and 0 < shared.ttl(keys[0]) <= django_settings.AXES_COOLOFF_TIME.total_seconds()


def test_a_locked_out_pair_locks_neither_the_account_elsewhere_nor_the_address_for_others(
    client, member, second_member
):
    for n in range(django_settings.AXES_FAILURE_LIMIT):
        sign_in(client, "mona", f"guess-{n}", address=GUESSER)
    assert sign_in(client, "mona", "pw-mona-123", address=GUESSER).status_code == 429
    # Another account behind the same address (an office, a proxy) signs in.
    assert sign_in(client, "max", "pw-max-123", address=GUESSER).status_code == 302
    client.logout()
    # The same account from another address signs in.
    response = sign_in(client, "mona", "pw-mona-123", address=NEIGHBOUR)
    assert response.status_code == 302 and response["Location"] == reverse("web:memory-list")
    assert signed_in(client)


def test_fewer_failures_than_the_limit_do_not_lock_and_a_success_clears_them(client, member):
    limit = django_settings.AXES_FAILURE_LIMIT
    for n in range(limit - 1):
        assert sign_in(client, "mona", f"guess-{n}", address=GUESSER).status_code == 400
    assert sign_in(client, "mona", "pw-mona-123", address=GUESSER).status_code == 302
    client.logout()
    for n in range(limit - 1):
        assert sign_in(client, "mona", f"again-{n}", address=GUESSER).status_code == 400
    assert sign_in(client, "mona", "pw-mona-123", address=GUESSER).status_code == 302


def test_the_admin_sign_in_is_throttled_too(client, django_user_model):
    django_user_model.objects.create_superuser("root", "root@example.com", "pw-root-123")
    for n in range(django_settings.AXES_FAILURE_LIMIT):
        sign_in(client, "root", f"guess-{n}", address=GUESSER, url=ADMIN_LOGIN)
    response = sign_in(client, "root", "pw-root-123", address=GUESSER, url=ADMIN_LOGIN)
    assert response.status_code == 429 and "Too many failed sign-ins" in response.content.decode()
    assert not signed_in(client)
    assert sign_in(client, "root", "pw-root-123", address=NEIGHBOUR, url=ADMIN_LOGIN).status_code == 302


def test_the_lockout_ends_once_the_cool_off_has_passed_since_the_last_attempt(client, member, settings, handler_for):
    # Redis expires keys on its own clock, which time-machine cannot move; Django's local-memory
    # cache expires them on time.time(), so the same handler's cool-off is shown here with it.
    settings.CACHES = {**settings.CACHES, "signin": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    handler_for()
    cool_off = django_settings.AXES_COOLOFF_TIME
    with time_machine.travel("2026-12-01 09:00:00Z", tick=False) as clock:
        for n in range(django_settings.AXES_FAILURE_LIMIT):
            sign_in(client, "mona", f"guess-{n}", address=GUESSER)
        clock.shift(cool_off - timedelta(minutes=1))
        # Still locked, and this attempt (the right password) restarts the wait.
        assert sign_in(client, "mona", "pw-mona-123", address=GUESSER).status_code == 429
        clock.shift(cool_off - timedelta(minutes=1))
        assert sign_in(client, "mona", "pw-mona-123", address=GUESSER).status_code == 429
        clock.shift(cool_off + timedelta(seconds=1))
        response = sign_in(client, "mona", "pw-mona-123", address=GUESSER)
    assert response.status_code == 302 and signed_in(client)


def test_with_redis_unreachable_people_still_sign_in_and_a_wrong_password_is_still_refused(
    client, member, settings, handler_for
):
    settings.CACHES = {
        **settings.CACHES,
        "signin": {**settings.CACHES["signin"], "LOCATION": "unix:///nonexistent/redis.sock?db=1"},
    }
    handler_for()
    assert sign_in(client, "mona", "nope", address=GUESSER).status_code == 400
    assert sign_in(client, "mona", "pw-mona-123", address=GUESSER).status_code == 302


def test_a_signin_without_a_request_is_left_to_the_password_check(client, member):
    # The test client's login() and the shell call authenticate() with no request, so no address.
    assert client.login(username="mona", password="pw-mona-123")
    assert not client.login(username="mona", password="nope")
    assert caches["signin"]  # the throttle's cache is configured beside the default
