"""A web process that serves one remember through `config.wsgi.application`, as gunicorn loads it, prints the
answer, then closes the response (`close`) or never does (`hold`), and waits to be killed.

    python -m memories.tests.serve_one_remember close|hold TOKEN PAYLOAD_JSON
"""

from __future__ import annotations

import json
import sys
import time

from memories.tests.wsgi_requests import served


def main() -> None:
    mode, token, payload = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    from config.wsgi import application

    status, answer, response = served(application, token, payload)
    print(json.dumps({"status": status, "id": answer.get("id")}), flush=True)
    if mode == "close":
        response.close()  # what gunicorn does once the body is written: request_finished
        print(json.dumps({"closed": True}), flush=True)
    time.sleep(600)  # the test kills this process


if __name__ == "__main__":
    main()
