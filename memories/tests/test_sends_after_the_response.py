"""A remember's embedding task is sent after its response has gone (on `request_finished`), at commit when
no request holds it, and a web process killed between the two loses no memory: the beat sweep embeds it.
Against the test's real Redis broker (and a real Celery worker and beat for the sweep)."""

from __future__ import annotations

import base64
import json
import logging
import subprocess
import sys
import time

import pytest
import redis
from django.core.handlers.wsgi import WSGIHandler

from lib import after_response
from memories.embeddings.embedders import get_embedder
from memories.models import Memory
from memories.tests import processes
from memories.tests.wsgi_requests import served

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def broker(settings):
    queue = redis.Redis(unix_socket_path=settings.REDIS_URL.removeprefix("unix://"))
    queue.delete("embed", "unacked", "unacked_index")  # messages other tests of this process left behind
    yield queue
    queue.delete("embed", "unacked", "unacked_index")


@pytest.fixture
def wired():
    """This process holding a request's sends until its close, as config/wsgi.py wires the web server."""
    after_response.connect()
    yield WSGIHandler()
    after_response.disconnect()


@pytest.fixture
def remember(agent_with_token, member):
    place = {"channel": "D-mona", "kind": "dm", "people": [member.username]}
    return agent_with_token[1], lambda body: {"body": body, "place": place}


def queued_ids(broker) -> list[str]:
    """The memory ids of every embedding message waiting in the queue, oldest first (kombu pushes at the head)."""
    messages = [json.loads(raw) for raw in reversed(broker.lrange("embed", 0, -1))]
    bodies = [json.loads(base64.b64decode(message["body"])) for message in messages]
    return [memory_id for (args, _kwargs, _embed) in bodies for memory_id in args[0]]


def test_the_send_waits_for_the_response_to_close(wired, broker, remember):
    token, payload = remember
    status, answer, response = served(wired, token, payload("Prefers the window seat"))
    assert status.startswith("201")
    # The row has committed before anything is sent, and the response is written with nothing sent.
    assert Memory.objects.filter(pk=answer["id"], body="Prefers the window seat").exists()
    assert broker.llen("embed") == 0
    assert after_response.held_work() == 1
    response.close()  # the server has written the body: request_finished
    assert queued_ids(broker) == [answer["id"]]
    assert after_response.held_work() == 0


def test_outside_a_request_the_send_goes_at_commit(wired, broker, make_memory):
    memory = make_memory(body="Said in a task, not a request")
    assert queued_ids(broker) == [str(memory.pk)]


def test_a_response_never_closed_has_its_sends_run_when_the_next_request_begins(wired, broker, remember, caplog):
    token, payload = remember
    _status, first, _never_closed = served(wired, token, payload("First, its response never closed"))
    assert broker.llen("embed") == 0
    with caplog.at_level(logging.WARNING, logger="lib.after_response"):
        _status, second, response = served(wired, token, payload("Second"))
    assert "ended without request_finished; running its 1 held sends now" in caplog.text
    assert queued_ids(broker) == [first["id"]]
    response.close()
    assert queued_ids(broker) == [first["id"], second["id"]]


def test_a_broker_down_at_the_close_is_logged_and_the_row_kept(wired, remember, tmp_path, caplog):
    token, payload = remember
    redis_server = processes.StoppableRedis(tmp_path / "redis")
    redis_server.start()
    with processes.broker_at(redis_server.url):
        redis_server.stop()
        status, answer, response = served(wired, token, payload("Said while the broker was down"))
        with caplog.at_level(logging.WARNING, logger="memories.services"):
            response.close()
    assert status.startswith("201")
    assert "could not enqueue embedding for 1 memories" in caplog.text
    assert Memory.objects.filter(pk=answer["id"], embedding__isnull=True).exists()


def _web_process(mode: str, token: str, payload: dict) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "memories.tests.serve_one_remember", mode, token, json.dumps(payload)],
        cwd=processes.ROOT,
        env=processes.child_env(),
        stdout=subprocess.PIPE,
        text=True,
    )


def _answer(web: subprocess.Popen) -> dict:
    line = web.stdout.readline()
    assert line, f"the web process exited with {web.poll()}"
    return json.loads(line)


def _kill(web: subprocess.Popen) -> None:
    web.kill()  # SIGKILL: no close, no atexit, nothing held survives
    web.wait(timeout=10)


def test_control_a_web_process_that_closes_its_response_sends_the_task(broker, remember):
    token, payload = remember
    web = _web_process("close", token, payload("Sent once the response closed"))
    try:
        answer = _answer(web)
        assert answer["status"].startswith("201")
        assert _answer(web) == {"closed": True}
        assert queued_ids(broker) == [answer["id"]]
    finally:
        _kill(web)


@pytest.mark.slow
def test_a_web_process_killed_after_its_response_loses_no_memory(broker, remember, tmp_path):
    token, payload = remember
    web = _web_process("hold", token, payload("Answered, then the web process died"))
    try:
        answer = _answer(web)
    finally:
        _kill(web)
    assert answer["status"].startswith("201")
    memory = Memory.objects.get(pk=answer["id"])
    assert memory.embedding is None
    assert broker.llen("embed") == 0, "the send was made before the response: nothing was held"

    env = {"ARCHIVIST_EMBEDDING_SWEEP_SECONDS": "1", "ARCHIVIST_EMBEDDING_SWEEP_GRACE_SECONDS": "0"}
    worker = processes.worker(tmp_path / "worker.log", **env).start()
    beat = processes.beat(tmp_path / "beat.log", tmp_path, **env).start()
    try:
        deadline = time.monotonic() + 90
        while not Memory.objects.filter(pk=memory.pk, embedding__isnull=False).exists():
            assert time.monotonic() < deadline, "the sweep never embedded the row"
            time.sleep(0.2)
    finally:
        beat.stop()
        worker.stop()
    assert Memory.objects.get(pk=memory.pk).embedding_model == get_embedder().name
    assert "memories.tasks.sweep_embeddings" in beat.log()
