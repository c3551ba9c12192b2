"""Where webhooks may go: public addresses only, checked when a URL is saved and again at every delivery.

A URL whose host resolves to a loopback, private, link-local, shared (CGNAT), multicast or reserved
address (cloud metadata services among them: 169.254.169.254, fd00:ec2::254) is refused, unless
WEBHOOKS_ALLOW_PRIVATE_NETWORKS is on (tests, a receiver on the same network). Each delivery resolves
the host again and connects to the address it checked, with TLS still verified for the host name,
so a DNS answer that changes between the check and the connection (rebinding) cannot redirect it.
Redirects are not followed.
"""
import ipaddress
import socket
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

import urllib3
from django.conf import settings

from lftrack.errors import Unprocessable

TIMEOUT_SECONDS = 5.0
# Of a receiver's answer we read this much at most, and keep EXCERPT characters in the log.
READ_LIMIT = 16 * 1024
EXCERPT = 1000


class AddressRefused(Exception):
    """The URL's host resolves to an address webhooks may not reach; `str()` says why, for the log."""


def address_allowed(address: str) -> bool:
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped  # ::ffff:127.0.0.1 is 127.0.0.1
    return ip.is_global and not ip.is_multicast


def url_check(url: str) -> str:
    """The URL, if webhooks may be sent to it; 422 with the reason otherwise (at creation and change)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise Unprocessable("url must be an absolute https URL")
    if parts.scheme != "https" and not settings.DEBUG:
        raise Unprocessable("url must be https")
    if parts.username or parts.password:
        raise Unprocessable("url must not carry credentials")
    try:
        resolve(parts.hostname, _port(parts))
    except AddressRefused as refused:
        raise Unprocessable(str(refused)) from None
    return url


def _port(parts) -> int:
    try:
        return parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise Unprocessable("url must be an absolute https URL") from None


def resolve(host: str, port: int) -> str:
    """The address to connect to: every address the host resolves to must be allowed (one bad record
    in the answer refuses it), and the first is used."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        raise AddressRefused("url host does not resolve") from None
    addresses = [info[4][0] for info in infos]
    if not addresses:
        raise AddressRefused("url host does not resolve")
    if not settings.WEBHOOKS_ALLOW_PRIVATE_NETWORKS and not all(map(address_allowed, addresses)):
        raise AddressRefused("url resolves to a private, loopback or link-local address")
    return addresses[0]


@dataclass
class Answer:
    status: int | None  # None: no HTTP answer (refused address, network error, timeout)
    duration_ms: int
    excerpt: str = ""
    error: str = ""


def post(url: str, body: bytes, headers: dict[str, str]) -> Answer:
    """POST `body` to `url` through the address checked now: 5 s to connect, 5 s for the answer."""
    started = time.monotonic()
    parts = urlsplit(url)
    try:
        address = resolve(parts.hostname, _port(parts))
    except (AddressRefused, Unprocessable) as refused:
        return Answer(status=None, duration_ms=0, error=f"refused: {refused}")
    host_header = parts.netloc
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    timeout = urllib3.Timeout(connect=TIMEOUT_SECONDS, read=TIMEOUT_SECONDS)
    if parts.scheme == "https":
        pool = urllib3.HTTPSConnectionPool(
            address, _port(parts), timeout=timeout, retries=False, maxsize=1,
            server_hostname=parts.hostname, assert_hostname=parts.hostname,
        )
    else:
        pool = urllib3.HTTPConnectionPool(address, _port(parts), timeout=timeout, retries=False, maxsize=1)
    try:
        response = pool.urlopen(
            "POST", path, body=body, headers={**headers, "Host": host_header}, redirect=False,
            preload_content=False, assert_same_host=False,
        )
        try:
            raw = _read(response, started)
        finally:
            response.release_conn()
        excerpt = raw.decode("utf-8", "replace")[:EXCERPT]
        return Answer(status=response.status, duration_ms=_ms(started), excerpt=excerpt)
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        return Answer(status=None, duration_ms=_ms(started), error=_describe(exc))
    finally:
        pool.close()


def _read(response, started: float) -> bytes:
    """At most READ_LIMIT bytes, and no later than the deadline: a receiver cannot hold the worker."""
    chunks, size = [], 0
    while size < READ_LIMIT and time.monotonic() - started < 2 * TIMEOUT_SECONDS:
        chunk = response.read(min(4096, READ_LIMIT - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _ms(started: float) -> int:
    return round((time.monotonic() - started) * 1000)


def _describe(exc: BaseException) -> str:
    """A network failure in one line, never a URL's query or credentials."""
    if isinstance(exc, (urllib3.exceptions.TimeoutError, socket.timeout)):
        return "timeout"
    reason = getattr(exc, "reason", None) or exc
    return f"{type(reason).__name__}: {reason}"[:300]
