"""Small helpers shared by the agent-turn API tests."""

from __future__ import annotations

from rest_framework.test import APIClient


def session_client(user) -> APIClient:
    client = APIClient()
    client.force_login(user)
    return client


def remember(client, place, body, **extra):
    """Remember through the API. Outside a person scope a fact must say whom it is about; these tests'
    facts are operational unless a test says otherwise, so `subject_type` defaults to workspace there."""
    if "subject_type" not in extra and "only_for" not in extra and place and place.get("kind") != "dm":
        extra["subject_type"] = "workspace"
    return client.post("/api/v1/memories", {"body": body, "place": place, **extra}, format="json")


def recall(client, place, question="", **extra):
    return client.post("/api/v1/recall", {"question": question, "place": place, **extra}, format="json")


def render(client, place, turn_id, **extra):
    return client.post("/api/v1/render", {"place": place, "turn_id": turn_id, **extra}, format="json")


def stub_vector(text: str, dimensions: int = 384) -> list[float]:
    """A deterministic unit vector for a text: what the loopback embeddings stand-in answers."""
    import hashlib

    import numpy as np

    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
    vector = np.random.default_rng(seed).standard_normal(dimensions)
    return (vector / np.linalg.norm(vector)).tolist()


class EmbeddingsStandIn:
    """An OpenAI-compatible /v1/embeddings server on loopback: the outside service, stood in for over real HTTP."""

    def __init__(self):
        import json
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - the http.server spelling
                length = int(self.headers.get("Content-Length", 0))
                payload = json.loads(self.rfile.read(length))
                data = [
                    {"object": "embedding", "index": index, "embedding": stub_vector(text)}
                    for index, text in enumerate(payload["input"])
                ]
                body = json.dumps({"object": "list", "data": data, "model": payload["model"]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def learned_facts(org, bodies, *, days: int = 30, **fields) -> list:
    """One learned fact an agent inferred from a message per body, each embedded by the stand-in (its own vector),
    written in one statement."""
    from datetime import timedelta

    from django.utils import timezone

    from memories.models import Author, Bucket, Memory, SourceKind

    expires = timezone.now() + timedelta(days=days)
    return Memory.objects.bulk_create(
        Memory(
            organisation=org,
            bucket=Bucket.LEARNED,
            author=Author.MODEL,
            source_kind=SourceKind.MESSAGE,
            body=body,
            expires_at=expires,
            embedding=stub_vector(body),
            embedding_model="stand-in",
            **fields,
        )
        for body in bodies
    )
