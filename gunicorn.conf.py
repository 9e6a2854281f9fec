"""gunicorn settings for ``make serve`` (docs/operations.md). Every value comes from the
environment, so one file serves every deployment.

BIND              address:port to listen on (default 127.0.0.1:8000)
WEB_CONCURRENCY   worker processes (default 2 per core, plus 1)
GUNICORN_THREADS  requests each worker runs at once, each in a thread with its own
                  database connection (default 4; claimsdb/asgi.py)
GUNICORN_TIMEOUT  seconds a worker's event loop may go silent before the worker is
                  replaced (default 60)

The workers are uvicorn's (the uvicorn-worker package) serving Django's ASGI handler
(claimsdb/asgi.py): request bodies are read on each worker's event loop before the app
runs, so clients that send slowly hold no worker (docs/operations.md#slow-clients).
"""

import multiprocessing
import os

wsgi_app = "claimsdb.asgi:application"
worker_class = "uvicorn_worker.UvicornWorker"
bind = os.environ.get("BIND", "127.0.0.1:8000")
workers = int(os.environ.get("WEB_CONCURRENCY", multiprocessing.cpu_count() * 2 + 1))
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "60"))
graceful_timeout = 30
# Workers are recycled now and then, so a slow leak can never grow without bound.
max_requests = 2000
max_requests_jitter = 200
# The app writes its own access line (claimsdb.request, with the request id and user);
# gunicorn's own messages and errors go to stdout beside it.
accesslog = None
errorlog = "-"
loglevel = os.environ.get("GUNICORN_LOG_LEVEL", "info")
capture_output = True
# Each worker opens its own database connections after the fork.
preload_app = False
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1")
