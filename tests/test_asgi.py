"""The ASGI handler make serve runs (claimsdb/asgi.py): a request takes a worker's slot
only once its body is in, bodies are bounded before they are read, and streaming responses
stream."""

from __future__ import annotations

import asyncio
import copy
import json
import warnings

import pytest

from claimsdb import asgi, limits
from claimsdb.services import bundle_load

from .support import publish, run_in_thread

pytestmark = pytest.mark.django_db(transaction=True)  # the handler's threads read the data


def scope(path: str, method: str = "GET", headers: list | None = None) -> dict:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"testserver"), *(headers or [])],
        "client": ("127.0.0.1", 50000),
        "server": ("testserver", 80),
    }


class Exchange:
    """One request's messages: the body to hand over, and what the app sends back."""

    def __init__(self, chunks: list[bytes] | None = None, stall: bool = False):
        self.chunks = list(chunks or [])
        self.stall = stall  # after the chunks, never send the rest (a slow client)
        self.received = 0
        self.sent: list[dict] = []
        self.done = asyncio.Event()

    async def receive(self) -> dict:
        if self.chunks:
            self.received += 1
            return {"type": "http.request", "body": self.chunks.pop(0), "more_body": True}
        if self.stall:
            await asyncio.Event().wait()
        if self.done.is_set():
            await asyncio.Event().wait()
        self.done.set()
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(self, message: dict) -> None:
        self.sent.append(message)

    @property
    def status(self) -> int:
        return next(m["status"] for m in self.sent if m["type"] == "http.response.start")

    @property
    def body(self) -> bytes:
        return b"".join(m.get("body", b"") for m in self.sent if m["type"] == "http.response.body")


def serve(handler, path: str, exchange: Exchange, **options):
    return handler(scope(path, **options), exchange.receive, exchange.send)


def test_a_request_still_sending_its_body_holds_no_slot(monkeypatch, seeded, reviewer):
    publish(reviewer, notes="Release 1")
    monkeypatch.setenv("GUNICORN_THREADS", "1")
    handler = asgi.ClaimsdbASGIHandler()
    assert handler.slots._value == 1

    async def run() -> Exchange:
        slow = [Exchange([b"x"], stall=True) for _ in range(8)]
        trickling = [
            asyncio.create_task(
                serve(
                    handler,
                    "/api/v1/imports/",
                    exchange,
                    method="POST",
                    headers=[(b"content-length", b"4096")],
                )
            )
            for exchange in slow
        ]
        await asyncio.sleep(0.2)
        reader = Exchange()
        await asyncio.wait_for(serve(handler, "/api/v1/cases/", reader), 30)
        for task in trickling:
            task.cancel()
        return reader

    reader = run_in_thread(run())
    assert reader.status == 200
    assert json.loads(reader.body)["count"] == 2


def test_a_declared_body_over_the_limit_is_refused_before_it_is_read(db):
    handler = asgi.ClaimsdbASGIHandler()
    exchange = Exchange([b"x"] * 3)
    too_many = str(limits.UPLOAD_MAX_BYTES + 1).encode()
    run_in_thread(
        serve(
            handler,
            "/api/v1/imports/",
            exchange,
            method="POST",
            headers=[(b"content-length", too_many)],
        )
    )
    assert exchange.status == 413
    assert exchange.received == 0
    assert [e["code"] for e in json.loads(exchange.body)["errors"]] == ["request.too_large"]


def test_a_body_without_a_length_is_refused_once_it_passes_the_limit(db, monkeypatch):
    monkeypatch.setattr(limits, "UPLOAD_MAX_BYTES", 10)
    handler = asgi.ClaimsdbASGIHandler()
    exchange = Exchange([b"0123456"] * 100, stall=True)
    run_in_thread(
        asyncio.wait_for(
            serve(
                handler,
                "/imports/new/",
                exchange,
                method="POST",
                headers=[(b"transfer-encoding", b"chunked")],
            ),
            30,
        )
    )
    assert exchange.status == 413
    assert exchange.received == 2  # 14 bytes: past the limit, and no further
    assert exchange.body.startswith(b"The request body is 14 bytes")


def test_a_streaming_response_streams(seeded, reviewer):
    publish(reviewer, notes="Release 1")
    bundle_load(user=reviewer, bundle=copy.deepcopy(seeded), summary="Again")
    handler = asgi.ClaimsdbASGIHandler()
    exchange = Exchange()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run_in_thread(serve(handler, "/api/v1/releases/1/bundle.json", exchange))
    assert exchange.status == 200
    # read in trips from the request's own thread, never whole into a list (Django's
    # fallback for a synchronous iterator, which warns)
    assert not [w for w in caught if "synchronous iterators" in str(w.message)]
    assert len(json.loads(exchange.body)["cases"]) == 2


def test_signing_in_and_a_form_under_the_asgi_handler(seeded, reviewer):
    """Sessions, CSRF and a signed-in page through the handler make serve runs."""
    import re
    from http.cookies import SimpleCookie

    handler = asgi.ClaimsdbASGIHandler()
    cookies: dict[str, str] = {}

    def remember(exchange: Exchange) -> None:
        start = next(m for m in exchange.sent if m["type"] == "http.response.start")
        for name, value in start["headers"]:
            if name.lower() == b"set-cookie":
                for morsel in SimpleCookie(value.decode()).values():
                    cookies[morsel.key] = morsel.value

    def request(path: str, method: str = "GET", body: bytes = b"") -> Exchange:
        headers = [(b"cookie", "; ".join(f"{k}={v}" for k, v in cookies.items()).encode())]
        if body:
            headers += [
                (b"content-type", b"application/x-www-form-urlencoded"),
                (b"content-length", str(len(body)).encode()),
                (b"referer", b"http://testserver/accounts/login/"),
            ]
        exchange = Exchange([body] if body else [])
        run_in_thread(serve(handler, path, exchange, method=method, headers=headers))
        remember(exchange)
        return exchange

    form = request("/accounts/login/")
    assert form.status == 200
    token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', form.body).group(1)
    refused = Exchange([b"username=reviewer&password=pw-reviewer"])
    run_in_thread(
        serve(
            handler,
            "/accounts/login/",
            refused,
            method="POST",
            headers=[(b"content-type", b"application/x-www-form-urlencoded")],
        )
    )
    assert refused.status == 403  # no CSRF token, no sign-in
    signed_in = request(
        "/accounts/login/",
        "POST",
        b"csrfmiddlewaretoken=" + token + b"&username=reviewer&password=pw-reviewer",
    )
    assert signed_in.status == 302 and "sessionid" in cookies
    assert request("/cases/new/").status == 200  # an analyst's form, for the session's user
