"""`mode: reranked`: an HTTP reranker (a loopback stand-in) orders contextual recall's best candidates."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from memories.tests.api.helpers import recall, remember


class RerankerStandIn:
    """A /rerank server on loopback: scores a text by how often it says "lighthouse"; `fail` makes it answer 500."""

    def __init__(self):
        self.fail = False
        self.requests: list[dict] = []
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - the http.server spelling
                payload = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                stand_in.requests.append(
                    {"path": self.path, "payload": payload, "auth": self.headers.get("Authorization")}
                )
                if stand_in.fail:
                    self.send_response(500)
                    self.end_headers()
                    return
                if "documents" in payload:  # Cohere style
                    texts = payload["documents"]
                    body = {
                        "results": [{"index": i, "relevance_score": t.count("lighthouse")} for i, t in enumerate(texts)]
                    }
                else:  # text-embeddings-inference style
                    body = [{"index": i, "score": t.count("lighthouse")} for i, t in enumerate(payload["texts"])]
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def stand_in(settings):
    server = RerankerStandIn()
    settings.RERANKER_URL = server.url
    settings.RERANKER_STYLE = "tei"
    yield server
    server.stop()


def write_facts(client, place):
    remember(client, place, "Max: the harbour trip was lovely")
    remember(client, place, "Max: we saw the harbour lighthouse lighthouse")
    remember(client, place, "Max: harbour parking is expensive")


def bodies(data) -> list[str]:
    return [row["body"] for row in data["results"]]


def test_the_reranker_orders_the_candidates(agent_api, general, stand_in):
    write_facts(agent_api, general)
    data = recall(agent_api, general, "harbour", mode="reranked").json()
    assert bodies(data)[0] == "Max: we saw the harbour lighthouse lighthouse"
    assert data["ranking"]["used"] == "reranked" and "reranker" not in data["notice"]
    request = stand_in.requests[-1]
    assert request["path"] == "/rerank" and request["payload"]["query"] == "harbour"
    assert len(request["payload"]["texts"]) == 3


def test_the_cohere_style_is_spoken_with_model_and_key(agent_api, general, stand_in, settings):
    settings.RERANKER_STYLE = "cohere"
    settings.RERANKER_MODEL = "rerank-v3.5"
    settings.RERANKER_KEY = "secret-key"
    write_facts(agent_api, general)
    data = recall(agent_api, general, "harbour", mode="reranked").json()
    assert bodies(data)[0] == "Max: we saw the harbour lighthouse lighthouse"
    request = stand_in.requests[-1]
    assert request["payload"]["model"] == "rerank-v3.5" and request["payload"]["top_n"] == 3
    assert request["auth"] == "Bearer secret-key"


def test_a_failing_reranker_leaves_the_contextual_order_and_says_so(agent_api, general, stand_in):
    write_facts(agent_api, general)
    expected = bodies(recall(agent_api, general, "harbour", mode="contextual").json())
    stand_in.fail = True
    data = recall(agent_api, general, "harbour", mode="reranked").json()
    assert bodies(data) == expected
    assert data["ranking"]["used"] == "contextual"
    assert "The reranker failed" in data["notice"] and "500" in data["notice"]


def test_an_unreachable_reranker_leaves_the_contextual_order(agent_api, general, settings):
    settings.RERANKER_URL = "http://127.0.0.1:9"
    settings.RERANKER_TIMEOUT_SECONDS = 0.5
    write_facts(agent_api, general)
    data = recall(agent_api, general, "harbour", mode="reranked").json()
    assert len(data["results"]) == 3 and data["ranking"]["used"] == "contextual"
    assert "unreachable" in data["notice"]


def test_without_a_reranker_reranked_is_contextual_and_says_so(agent_api, general, settings):
    settings.RERANKER_URL = ""
    write_facts(agent_api, general)
    data = recall(agent_api, general, "harbour", mode="reranked").json()
    assert data["ranking"]["used"] == "contextual"
    assert "No reranker is configured" in data["notice"]


def test_pinned_facts_stay_first_and_the_limit_holds(agent_api, general, stand_in):
    remember(agent_api, general, "Parking pass is in the drawer", pinned=True)
    write_facts(agent_api, general)
    data = recall(agent_api, general, "harbour parking", mode="reranked", limit=2).json()
    assert bodies(data) == ["Parking pass is in the drawer", "Max: we saw the harbour lighthouse lighthouse"]
    assert all(not text.startswith("Parking pass") for text in stand_in.requests[-1]["payload"]["texts"])
