"""What an operator watches Archivist with: Prometheus metrics at /metrics and optional OpenTelemetry traces.

`lib.metrics` defines what the code records; this package serves it (`endpoint`), times every request
(`requests`), measures what only a scrape can (`live`), sums gunicorn's workers (`multiprocess`) and
switches traces on (`tracing`). docs/deploying.md says how to scrape and how to trace.
"""
