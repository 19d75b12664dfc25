"""Signing in with a password is throttled (django-axes): failures count per account and address
together, in the shared cache, and an account past the limit from that address is locked out for
the cool-off (settings AXES_*; docs/SECURITY.md).

The counts live in Redis, not in a table: a refused sign-in answers 400 and its request's
transaction rolls back (tenancy.middleware), which would erase a count kept in the database.
"""

from __future__ import annotations

import logging

from axes.backends import AxesStandaloneBackend
from axes.handlers.cache import AxesCacheHandler
from redis.exceptions import RedisError

logger = logging.getLogger(__name__)


class SignInThrottle(AxesCacheHandler):
    """Axes' cache handler, failing open: with Redis unreachable people still sign in (with their
    password checked as ever), unthrottled, and the outage is logged, rather than every sign-in failing."""

    def get_failures(self, request, credentials=None) -> int:
        try:
            return super().get_failures(request, credentials)
        except (RedisError, OSError) as error:
            logger.warning("sign-in throttle unavailable (%s); this attempt is not throttled", error)
            return 0

    def user_login_failed(self, sender, credentials: dict, request=None, **kwargs):
        try:
            return super().user_login_failed(sender, credentials, request, **kwargs)
        except (RedisError, OSError) as error:
            logger.warning("sign-in throttle unavailable (%s); this failure is not counted", error)
            return None

    def user_logged_in(self, sender, request, user, **kwargs):
        try:
            return super().user_logged_in(sender, request, user, **kwargs)
        except (RedisError, OSError) as error:
            logger.warning("sign-in throttle unavailable (%s); earlier failures are not cleared", error)
            return None


class SignInThrottleBackend(AxesStandaloneBackend):
    """Refuses a locked-out account and address before the password is checked.

    A call without a request (the test client's `login`, the shell) has no address to
    count against and is not a guess over the network: it is left to the next backend.
    """

    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)
