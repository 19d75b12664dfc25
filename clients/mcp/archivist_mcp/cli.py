"""`archivist-mcp`: the MCP server over stdio (token from ARCHIVIST_TOKEN) or streamable HTTP (the caller's
bearer token, passed through to Archivist; bound to loopback unless told otherwise)."""

from __future__ import annotations

import argparse
import ipaddress
import sys

from archivist_mcp.server import build_server

LOOPBACK_NAMES = ("localhost",)


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="archivist-mcp", description=__doc__)
    p.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    p.add_argument("--url", help="Archivist's base URL (default: ARCHIVIST_URL).")
    p.add_argument("--channel", help="The default place's channel id; any call may name its own place.")
    p.add_argument("--kind", choices=["dm", "private", "public"], help="The default place's kind.")
    p.add_argument("--people", default="", help="The default place's people, comma-separated handles.")
    p.add_argument("--host", default="127.0.0.1", help="HTTP: where to listen (default loopback only).")
    p.add_argument("--port", type=int, default=8765, help="HTTP: the port (default 8765).")
    p.add_argument(
        "--allow-remote",
        action="store_true",
        help="HTTP: allow a non-loopback --host. Put a gateway that authenticates callers in front (see README).",
    )
    p.add_argument("--verbose", action="store_true", help="Log every call to standard error (default: warnings only).")
    return p


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    place = None
    if args.channel or args.kind:
        if not (args.channel and args.kind):
            raise SystemExit("archivist-mcp: a default place needs both --channel and --kind.")
        people = [name.strip() for name in args.people.split(",") if name.strip()]
        place = {"channel": args.channel, "kind": args.kind, "people": people}
    if args.transport == "stdio":
        build_server(base_url=args.url, place=place, verbose=args.verbose).run("stdio")
        return
    if not is_loopback(args.host) and not args.allow_remote:
        raise SystemExit(
            f"archivist-mcp: refusing to listen on {args.host}: bearer pass-through is outside MCP's OAuth "
            "profile, so serve on loopback behind a gateway, or pass --allow-remote if one already guards it."
        )
    server = build_server(base_url=args.url, place=place, take_bearer=True, verbose=args.verbose)
    print(f"archivist-mcp: streamable HTTP on http://{args.host}:{args.port}/mcp", file=sys.stderr, flush=True)
    server.run("streamable-http", host=args.host, port=args.port, stateless_http=True, json_response=True)


if __name__ == "__main__":
    main()
