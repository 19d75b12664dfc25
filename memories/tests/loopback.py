"""Stand-ins for outside services, served over real HTTP on loopback: an OpenAI-compatible
embeddings endpoint and a chat-completions endpoint. Only outside services get stand-ins."""

from __future__ import annotations

import abc
import hashlib
import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np


def hashed_vector(text: str, dimensions: int = 384) -> list[float]:
    """A deterministic unit vector for a text, so equal texts get equal vectors."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
    vector = np.random.default_rng(seed).standard_normal(dimensions)
    return (vector / np.linalg.norm(vector)).tolist()


class LoopbackServer(abc.ABC):
    """A ThreadingHTTPServer on 127.0.0.1 with a free port; `handle(path, body)` returns (status, json)."""

    def __init__(self):
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's naming
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = None
                with server.lock:
                    server.requests.append(
                        {"path": self.path, "body": body, "authorization": self.headers.get("Authorization")}
                    )
                status, payload = server.handle(self.path, body)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    @abc.abstractmethod
    def handle(self, path: str, body) -> tuple[int, dict]:
        """The status and JSON answer of a POST to `path` with this JSON body."""

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


class EmbeddingsStandIn(LoopbackServer):
    """`POST /v1/embeddings`: hashed vectors; refuses (400) any input containing `refuse_marker`."""

    def __init__(self, *, refuse_marker: str | None = None, unavailable_for: int = 0, dimensions: int = 384):
        super().__init__()
        self.refuse_marker = refuse_marker
        self.unavailable_for = unavailable_for
        self.dimensions = dimensions

    def inputs(self) -> list[str]:
        with self.lock:
            return [text for request in self.requests for text in (request["body"] or {}).get("input", [])]

    def handle(self, path, body):
        if path != "/v1/embeddings" or not isinstance(body, dict):
            return 404, {"error": {"message": "not found"}}
        with self.lock:
            if self.unavailable_for > 0:
                self.unavailable_for -= 1
                return 503, {"error": {"message": "overloaded"}}
        texts = body.get("input") or []
        if self.refuse_marker and any(self.refuse_marker in text for text in texts):
            return 400, {"error": {"message": "this input is refused by policy"}}
        data = [
            {"object": "embedding", "index": index, "embedding": hashed_vector(text, self.dimensions)}
            for index, text in enumerate(texts)
        ]
        return 200, {"object": "list", "data": data, "model": body.get("model")}


class ChatCompletionsStandIn(LoopbackServer):
    """`POST /v1/chat/completions`: answers with `reply(request_body)` as the message content."""

    def __init__(self, reply: Callable[[dict], str | dict], *, status: int = 200):
        super().__init__()
        self.reply = reply
        self.status = status

    def handle(self, path, body):
        if path != "/v1/chat/completions" or not isinstance(body, dict):
            return 404, {"error": {"message": "not found"}}
        if self.status != 200:
            return self.status, {"error": {"message": "stand-in failure"}}
        content = self.reply(body)
        if not isinstance(content, str):
            content = json.dumps(content)
        return 200, {
            "id": "chatcmpl-standin",
            "object": "chat.completion",
            "model": body.get("model"),
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
        }
