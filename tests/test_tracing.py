"""OpenTelemetry traces: off unless the standard OTEL_* variables ask; asked, Django's requests and the psycopg
statements under them are traced (the optional `otel` group, which `make test` installs)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from config.observability.tracing import wanted
from tests.deployment import spans

ROOT = Path(__file__).resolve().parent.parent
TRACED = """
from config.observability import tracing
assert tracing.start("archivist-web")
import django
django.setup()
from django.test import Client
Client().get("/healthz")
from opentelemetry import trace
trace.get_tracer_provider().force_flush()
"""


def test_traces_are_off_unless_the_standard_variables_ask():
    assert not wanted({})
    assert wanted({"OTEL_TRACES_EXPORTER": "console"})
    assert wanted({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"})
    assert not wanted({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"})
    assert not wanted({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "true"})


def test_asked_for_a_request_and_its_statements_are_traced():
    env = {**os.environ, "OTEL_TRACES_EXPORTER": "console", "OTEL_SERVICE_NAME": "archivist-probe", "PYTHONPATH": "."}
    done = subprocess.run(
        [sys.executable, "-c", TRACED], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    traced = spans(done.stdout)
    request = next(span for span in traced if span["name"] == "GET healthz")
    statements = [span for span in traced if span["attributes"].get("db.system") == "postgresql"]
    assert statements, [span["name"] for span in traced]
    # The statements are the request's children, and the service is named by OTEL_SERVICE_NAME.
    assert {span["context"]["trace_id"] for span in statements} == {request["context"]["trace_id"]}
    assert request["resource"]["attributes"]["service.name"] == "archivist-probe"
    # Parameters are never recorded: they hold what people said.
    assert not any(key.startswith("db.statement.parameters") for span in statements for key in span["attributes"])
