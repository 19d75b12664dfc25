"""The address a request comes from: the peer, or the address a trusted proxy forwarded.

Pure: no Django. A peer is trusted only when the operator names it
(`ARCHIVIST_TRUSTED_PROXIES`): otherwise anyone could send `X-Forwarded-For`
and be counted as somebody else, escaping a per-address limit.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def proxy_networks(entries: Sequence[str]) -> tuple[Network, ...]:
    """The trusted proxies as networks (an address alone is a network of one); raises ValueError on a typo."""
    return tuple(ipaddress.ip_network(entry.strip(), strict=False) for entry in entries if entry.strip())


def _trusted(address: str, proxies: tuple[Network, ...]) -> bool:
    try:
        parsed = ipaddress.ip_address(address.strip())
    except ValueError:
        return False
    return any(parsed in network for network in proxies)


def client_address(*, peer: str, forwarded_for: str, proxies: tuple[Network, ...]) -> str:
    """The peer, unless it is a trusted proxy: then the nearest forwarded address no trusted proxy holds
    (the right-most hops were added by our own proxies; what is left of them, the client could have written)."""
    if not proxies or not _trusted(peer, proxies):
        return peer
    hops = [hop.strip() for hop in forwarded_for.split(",") if hop.strip()]
    for hop in reversed(hops):
        if not _trusted(hop, proxies):
            return hop
    return hops[0] if hops else peer
