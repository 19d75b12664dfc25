"""Arguments a tool's schema refuses come back in the API's refusal shape, and the stdio server writes nothing
to standard error unless asked (a desktop client shows it as the server's log)."""

from __future__ import annotations

import os
import sys

from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client


def stdio(live_api, errlog, *extra: str):
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "archivist_mcp", "--transport", "stdio", "--channel", "C-general", "--kind", "public", *extra],
        env={**os.environ, "ARCHIVIST_URL": live_api.url, "ARCHIVIST_TOKEN": live_api.token},
    )
    return Client(stdio_client(params, errlog=errlog))


async def calls(client_of) -> dict:
    async with client_of as client:
        return {
            "bad": await client.call_tool("recall", {"question": "lunch", "limit": "many", "mode": "psychic"}),
            "good": await client.call_tool("recall", {"question": "lunch"}),
        }


def test_refused_arguments_read_as_the_api_refusal_and_stdio_is_quiet(live_api, run_async, tmp_path):
    with (tmp_path / "stderr").open("w+") as errlog:
        seen = run_async(calls(stdio(live_api, errlog)))
        errlog.seek(0)
        assert errlog.read() == ""  # a call over HTTP to Archivist logs nothing by default
    bad = seen["bad"]
    assert bad.is_error and bad.structured_content["error"] == "invalid"
    assert set(bad.structured_content["fields"]) == {"limit", "mode"}
    assert bad.structured_content["detail"] == "The request was refused: check limit, mode."
    assert bad.content[0].text.startswith("Archivist refused this call (400 invalid)")
    assert "- limit: " in bad.content[0].text and "validation error" not in bad.content[0].text
    assert not seen["good"].is_error  # the positive control: the same server answers a good call


def test_verbose_logs_each_call_to_standard_error(live_api, run_async, tmp_path):
    with (tmp_path / "stderr").open("w+") as errlog:
        run_async(calls(stdio(live_api, errlog, "--verbose")))
        errlog.seek(0)
        assert "HTTP Request: POST" in errlog.read()
