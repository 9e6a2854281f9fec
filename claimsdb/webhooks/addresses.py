"""Where a delivery may go: a receiver's URL is checked, its host resolved, and every
address it resolves to checked, before each delivery (docs/integrations.md, "Receivers at
private addresses").

A receiver at a private, loopback, link-local or otherwise non-global address is refused
unless ``WEBHOOKS_ALLOW_PRIVATE`` is set: claimsdb must not become a way to reach the
network it runs in (cloud metadata at 169.254.169.254, a database on 127.0.0.1). The
connection then goes to an address that was checked (not to the name, resolved again),
so a name that resolves elsewhere the second time gains nothing; redirects are never
followed.
"""

from __future__ import annotations

import http.client
import ipaddress
import socket
import ssl
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings

from claimsdb.codes import WebhookCode

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class AddressRefused(Exception):
    """A receiver URL claimsdb will not send to; ``code`` says why."""

    def __init__(self, code: WebhookCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Receiver:
    """A receiver URL taken apart, with the addresses its host resolved to (all allowed)."""

    scheme: str
    host: str
    port: int
    target: str  # path and query, as sent in the request line
    addresses: tuple[str, ...]


def allow_private() -> bool:
    return bool(getattr(settings, "WEBHOOKS_ALLOW_PRIVATE", False))


def check_url(url: str) -> tuple[str, str, int, str]:
    """The URL's scheme, host, port and target, or ``AddressRefused`` (``webhook.url_invalid``)
    when it is not an http(s) URL with a host and without credentials."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as error:
        raise AddressRefused(WebhookCode.URL_INVALID, f"the URL cannot be read: {error}") from None
    if parts.scheme not in ("http", "https"):
        raise AddressRefused(
            WebhookCode.URL_INVALID, "a receiver URL starts with https:// (or http://)"
        )
    if not parts.hostname:
        raise AddressRefused(WebhookCode.URL_INVALID, "the URL names no host")
    if parts.username is not None or parts.password is not None:
        raise AddressRefused(
            WebhookCode.URL_INVALID,
            "a receiver URL carries no user name or password: deliveries are signed instead",
        )
    if parts.fragment:
        raise AddressRefused(WebhookCode.URL_INVALID, "a receiver URL has no #fragment")
    default = 443 if parts.scheme == "https" else 80
    target = parts.path or "/"
    if parts.query:
        target = f"{target}?{parts.query}"
    return parts.scheme, parts.hostname, port or default, target


def refusal(address: IPAddress) -> str | None:
    """Why a receiver may not be at this address (None: it may)."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if address.is_loopback:
        return "a loopback address"
    if address.is_link_local:
        return "a link-local address"
    if address.is_unspecified:
        return "the unspecified address"
    if address.is_multicast:
        return "a multicast address"
    if address.is_private:
        return "a private address"
    if not address.is_global:
        return "an address that is not public"
    return None


def resolve(url: str) -> Receiver:
    """Check ``url`` and resolve its host; every address must be allowed.

    Raises ``AddressRefused``: ``webhook.url_invalid`` for a URL that is not one,
    ``webhook.url_unresolved`` for a host that does not resolve, ``webhook.url_refused``
    for one that resolves to an address receivers may not be at.
    """
    scheme, host, port, target = check_url(url)
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as error:
        raise AddressRefused(
            WebhookCode.URL_UNRESOLVED, f"the host {host} does not resolve ({error})"
        ) from None
    addresses: list[str] = []
    for info in infos:
        text = str(info[4][0]).split("%", 1)[0]
        if text not in addresses:
            addresses.append(text)
    if not addresses:
        raise AddressRefused(WebhookCode.URL_UNRESOLVED, f"the host {host} has no address")
    if not allow_private():
        for text in addresses:
            why = refusal(ipaddress.ip_address(text))
            if why is not None:
                raise AddressRefused(
                    WebhookCode.URL_REFUSED,
                    f"the host {host} resolves to {text}, {why}: receivers must be at public "
                    "addresses (WEBHOOKS_ALLOW_PRIVATE allows others)",
                )
    return Receiver(scheme, host, port, target, tuple(addresses))


# --- sending to a checked address ---------------------------------------------------------


class _PinnedHTTPConnection(http.client.HTTPConnection):
    """An HTTP connection to one checked address, whatever its host resolves to now."""

    def __init__(self, host: str, port: int, address: str, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout)
        self.address = address

    def connect(self) -> None:
        self.sock = socket.create_connection((self.address, self.port), self.timeout)


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    """An HTTPS connection to one checked address; the certificate is checked against the
    host's name (SNI and hostname verification as usual)."""

    def __init__(self, host: str, port: int, address: str, timeout: float) -> None:
        self.tls = ssl.create_default_context()
        super().__init__(host, port, timeout=timeout, context=self.tls)
        self.address = address

    def connect(self) -> None:
        sock = socket.create_connection((self.address, self.port), self.timeout)
        self.sock = self.tls.wrap_socket(sock, server_hostname=self.host)


@dataclass(frozen=True)
class Answer:
    """What a receiver answered: its status code, or the error that kept it from answering."""

    status: int | None
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


def post(receiver: Receiver, body: bytes, headers: dict[str, str], *, timeout: float) -> Answer:
    """POST ``body`` to the receiver, at the first of its checked addresses that accepts a
    connection. A redirect is an answer like any other (not followed): it is not 2xx."""
    last_error = ""
    for address in receiver.addresses:
        connection: http.client.HTTPConnection
        if receiver.scheme == "https":
            connection = _PinnedHTTPSConnection(receiver.host, receiver.port, address, timeout)
        else:
            connection = _PinnedHTTPConnection(receiver.host, receiver.port, address, timeout)
        try:
            try:
                connection.connect()
            except OSError as refused:
                last_error = f"cannot connect to {address}: {refused}"
                continue
            connection.request("POST", receiver.target, body=body, headers=headers)
            response = connection.getresponse()
            excerpt = response.read(512).decode("utf-8", "replace")
            said = ""
            if not 200 <= response.status < 300:
                said = f"HTTP {response.status} {response.reason}"
                if 300 <= response.status < 400:
                    said += " (redirects are not followed)"
                elif excerpt.strip():
                    said += f": {excerpt.strip()[:300]}"
            return Answer(response.status, said)
        except (OSError, http.client.HTTPException) as broken:
            return Answer(None, f"{type(broken).__name__}: {broken}")
        finally:
            connection.close()
    return Answer(None, last_error or "no address to connect to")
