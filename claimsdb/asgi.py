"""ASGI entry point: what ``make serve`` runs, in uvicorn workers under gunicorn
(gunicorn.conf.py, docs/operations.md#slow-clients).

Django's ASGI handler reads a request's body on the worker's event loop before any of
claimsdb's (synchronous) code runs, so a client that sends its body one byte at a time
holds a socket and a buffer, never a thread, a database connection or the worker. On top
of Django's handler, ``ClaimsdbASGIHandler`` keeps what a synchronous worker gave for
free:

* **a bound on the requests a worker runs at once** (``GUNICORN_THREADS``, default 4):
  each runs in a thread of its own with its own database connection, so the slots, not
  the number of clients, bound the threads and connections. A request takes its slot
  once its body is in, and gives it back when its response is sent;
* **a bound on the body**: a declared ``Content-Length`` above ``UPLOAD_MAX_BYTES`` is
  answered 413 before a byte of the body is read, and a body sent without a length is
  counted as it comes and answered 413 as soon as it passes the bound (Django would
  otherwise spool all of it to disk first);
* **streaming responses that stream**: Django serves a streaming response built on a
  synchronous iterator (an export, a release bundle, a static file) under ASGI by reading
  all of it into a list first. Here the iterator is read a few chunks at a time, in the
  request's own thread (which holds the database cursor it reads from).
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import tempfile
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.exceptions import RequestAborted
from django.core.handlers.asgi import ASGIHandler
from django.http import HttpResponse

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "claimsdb.settings")

# Chunks of a streaming response taken from its iterator per trip to the request's thread.
CHUNKS_PER_TRIP = 32


@dataclass
class _Request:
    """What the handler knows of the request it is serving."""

    path: str
    slot_held: bool = False
    too_large: int = 0  # the body's size, when it went past the bound


_current: contextvars.ContextVar[_Request | None] = contextvars.ContextVar(
    "claimsdb_asgi_request", default=None
)


def _slots() -> int:
    return max(1, int(os.environ.get("GUNICORN_THREADS", "4")))


class ClaimsdbASGIHandler(ASGIHandler):
    def __init__(self) -> None:
        super().__init__()
        self.slots = asyncio.Semaphore(_slots())

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":
            return await super().__call__(scope, receive, send)
        from claimsdb.limits import UPLOAD_MAX_BYTES

        declared = _content_length(scope)
        if declared is not None and declared > UPLOAD_MAX_BYTES:
            await _send_too_large(scope["path"], declared, send)
            return
        state = _Request(path=scope["path"])
        token = _current.set(state)
        try:
            await super().__call__(scope, receive, send)
        finally:
            _current.reset(token)
            if state.slot_held:
                self.slots.release()
        if state.too_large:
            await _send_too_large(scope["path"], state.too_large, send)

    async def read_body(self, receive):
        """Django's ``read_body``, counting what comes, then waiting for a slot."""
        from claimsdb.limits import UPLOAD_MAX_BYTES

        state = _current.get()
        body_file = tempfile.SpooledTemporaryFile(
            max_size=settings.FILE_UPLOAD_MAX_MEMORY_SIZE, mode="w+b"
        )
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                body_file.close()
                raise RequestAborted()
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > UPLOAD_MAX_BYTES:
                body_file.close()
                if state is not None:
                    state.too_large = size
                raise RequestAborted()  # Django answers nothing; __call__ answers 413
            body_file.write(chunk)
            if not message.get("more_body", False):
                break
        body_file.seek(0)
        if state is not None:
            await self.slots.acquire()
            state.slot_held = True
        return body_file

    async def run_get_response(self, request):
        response = await super().run_get_response(request)
        if response.streaming and not response.is_async:
            response.streaming_content = _in_trips(iter(response.streaming_content))
        return response


async def _in_trips(iterator: Iterator[bytes]) -> AsyncIterator[bytes]:
    """The chunks of a synchronous iterator, taken ``CHUNKS_PER_TRIP`` at a time in the
    request's thread (thread-sensitive: the thread that ran its view)."""

    def take() -> list[bytes]:
        chunks = []
        for chunk in iterator:
            chunks.append(chunk)
            if len(chunks) >= CHUNKS_PER_TRIP:
                break
        return chunks

    trip = sync_to_async(take, thread_sensitive=True)
    while chunks := await trip():
        for chunk in chunks:
            yield chunk


def _content_length(scope) -> int | None:
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def _send_too_large(path: str, size: int, send) -> None:
    """The 413 of ``claimsdb.web.request_limits``, sent without Django (no request is
    made for a body that will not be read)."""
    from claimsdb.web.request_limits import too_large_message

    response = _too_large_response(path, too_large_message(size))
    await send(
        {
            "type": "http.response.start",
            "status": response.status_code,
            "headers": [
                (name.encode("latin-1"), value.encode("latin-1"))
                for name, value in [*response.items(), ("Connection", "close")]
            ],
        }
    )
    await send({"type": "http.response.body", "body": response.content})


def _too_large_response(path: str, message: str) -> HttpResponse:
    from claimsdb.web.request_limits import refused_response

    return refused_response(path, 413, "request.too_large", message, "")


async def _lifespan(receive, send) -> None:
    """Nothing to start or stop: Django opens its connections per request."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


def get_application() -> ClaimsdbASGIHandler:
    import django

    django.setup(set_prefix=False)
    return ClaimsdbASGIHandler()


application = get_application()
