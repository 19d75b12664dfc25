"""OpenTelemetry traces of Django requests, Celery tasks and psycopg statements: off unless asked for.

Asked for with the standard variables: `OTEL_TRACES_EXPORTER` (`otlp` or `console`) or an OTLP endpoint
(`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`); `OTEL_SDK_DISABLED=true` turns it off
again. The exporter reads the rest of `OTEL_*` itself (headers, protocol, sampler, `OTEL_SERVICE_NAME`).
Nothing is sent anywhere by default. The packages are the optional `otel` group (`make otel`).
"""

from __future__ import annotations

import logging
import os

logger = logging.getLogger(__name__)

ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
_started = False


def wanted(environ=os.environ) -> bool:
    """Whether the environment asks for traces (the module's docstring says how)."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporter = environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter:
        return exporter != "none"
    return any(environ.get(name, "").strip() for name in ENDPOINT_VARIABLES)


def start(service: str) -> bool:
    """Trace this process as `service` (unless `OTEL_SERVICE_NAME` names it) when asked to; True if tracing.

    Called once per process, after any fork (gunicorn's worker, Celery's pool child) and before Django loads
    its middleware, which the Django instrumentation adds to."""
    global _started
    if _started or not wanted():
        return _started
    try:
        _install(service)
    except ImportError as error:
        logger.error("OTEL_* asks for traces but the otel packages are missing (make otel): %s", error)
        return False
    _started = True
    logger.info("OpenTelemetry traces on for %s", os.environ.get("OTEL_SERVICE_NAME", service))
    return True


def _install(service: str) -> None:
    import psycopg
    from opentelemetry import trace
    from opentelemetry.instrumentation.celery import CeleryInstrumentor
    from opentelemetry.instrumentation.dbapi import trace_integration
    from opentelemetry.instrumentation.django import DjangoInstrumentor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter

    exporter: SpanExporter
    if os.environ.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "console":
        exporter = ConsoleSpanExporter()
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter()
    # Resource.create reads OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES; attributes given here win over them.
    named = {} if os.environ.get("OTEL_SERVICE_NAME") else {"service.name": service}
    provider = TracerProvider(resource=Resource.create(named))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    DjangoInstrumentor().instrument()
    CeleryInstrumentor().instrument()
    # Django opens connections through `psycopg.connect`; the DB-API instrumentation wraps it.
    trace_integration(psycopg, "connect", "postgresql", capture_parameters=False)  # type: ignore[arg-type]  # the module
