"""Refused again too soon: whether a client asks before its last refusal's Retry-After ended, kept in Redis
as one mark per presented token and one per client address, read and moved in the gate's script
(`lib.api.fair_share`), whose refusal of such a request the tarpit answers late (`lib.api.tarpit`)."""

from __future__ import annotations

from django.conf import settings
from django.core.cache import cache

# A refusal tells its client to stay away until it is answered plus its Retry-After; the mark keeps the latest
# such time, in ms, and expires with it. A request refused before then ignored it: it is held until then, at
# most `cap` ms, and its own answer moves the mark on, so a client that keeps ignoring keeps being held. The
# first refusal, and one after the client waited, are answered at once. The answer: the hold in ms (0: now).
# The mark is the token's (or the address's for its bar), not the connection's: Retry-After is the client's.
HELD_LUA = """
local function held(mark, now, wait, cap)
  if cap <= 0 then return 0 end
  local away = tonumber(redis.call('GET', mark) or '0')
  local hold = math.min(math.max(away - now, 0), cap)
  local until_ = math.max(away, now + hold + wait)
  redis.call('SET', mark, string.format('%d', until_), 'PX', string.format('%d', until_ - now))
  return hold
end
"""


def mark_keys(digest: str, address: str) -> list[str]:
    """The full Redis keys of the marks of a presented token (its digest) and of a client address."""
    return [cache.make_key(f"refused:token:{digest}"), cache.make_key(f"refused:address:{address[:64]}")]


def hold_args(now: float, *, share: int, rate: int, bar: int) -> list[int]:
    """The script's arguments for the marks: now and the longest hold (`REFUSAL_HOLD_MS`), then the
    Retry-After of each refusal the gate answers (its share, its token's rate, its address's bar), in ms."""
    return [int(now * 1000), settings.REFUSAL_HOLD_MS, share * 1000, rate * 1000, bar * 1000]
