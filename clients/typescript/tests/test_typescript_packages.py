"""Each TypeScript package's own tests (`npm test -w packages/NAME`) against this run's live server.

The packages' tests read ARCHIVIST_URL and ARCHIVIST_TOKEN (the live agent's), ARCHIVIST_TEST_PEOPLE (people who
exist) and ARCHIVIST_TEST_THROTTLE_URL: a POST of `{"seconds": n}` there makes the real server answer this token
429 for about n seconds, so a client's retry is tested against the server's own Retry-After.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from typescript_workspace import build_once, npm, package_names, require_toolchain

pytestmark = pytest.mark.slow


@pytest.fixture
def throttle_url(live_api) -> Iterator[str]:
    """A loopback endpoint whose POST throttles the live agent's token for the JSON body's `seconds`."""

    class Throttle(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            seconds = float(json.loads(self.rfile.read(length) or b"{}").get("seconds", 1.0))
            live_api.throttle_token(seconds_left=seconds)
            self.send_response(204)
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:  # quiet: npm's output is what a failure shows
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Throttle)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/throttle"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("package", package_names())
def test_the_package_passes_its_tests_against_the_live_server(package, live_api, throttle_url):
    require_toolchain()
    build_once()
    env = {
        "ARCHIVIST_URL": live_api.url,
        "ARCHIVIST_TOKEN": live_api.token,
        "ARCHIVIST_TEST_THROTTLE_URL": throttle_url,
        "ARCHIVIST_TEST_PEOPLE": "mona,max",
    }
    ran = npm("test", "-w", f"packages/{package}", env=env)
    print(ran.stdout)  # shown with -rP, and beside a failure
    assert ran.returncode == 0, f"npm test -w packages/{package} failed:\n{ran.stdout}"


def test_every_package_folder_is_tested():
    # The positive control for the parametrisation: the client package is found, so a new folder would be too.
    assert "client" in package_names()
