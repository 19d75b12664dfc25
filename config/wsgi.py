"""The WSGI application gunicorn serves (`config.wsgi:application`), and what the web process wires around it."""

import os

from django.core.wsgi import get_wsgi_application

from config.observability import tracing
from lib import after_response

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
# Before the application loads its middleware, which the Django instrumentation adds to; off unless OTEL_* asks.
tracing.start("archivist-web")
django_application = get_wsgi_application()

# After Django is set up (the gate reads its settings and cache). Outermost: a tenant past its share is refused
# before a Django request cycle starts.
from lib.api.fair_share import FairShareGate  # noqa: E402

application = FairShareGate(django_application)
# The tasks a request's commits queue are sent once its response has gone (gunicorn closes it after the body).
after_response.connect()
