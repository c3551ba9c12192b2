"""Where webhooks may go: public addresses only, checked when a URL is saved and again at every delivery.

A URL whose host resolves to an address that is not globally reachable is refused, unless
WEBHOOKS_ALLOW_PRIVATE_NETWORKS is on (tests, a receiver on the same network): every block that IANA's
special-purpose address registries do not mark globally reachable (loopback, private, link-local, shared,
documentation, benchmarking...; cloud metadata services among them: 169.254.169.254, fd00:ec2::254), IPv6
outside 2000::/3 (the only block IANA allocates for global unicast: site-local fec0::/10, SRv6's 5f00::/16
and whatever comes next are outside it), multicast, and what Python's ipaddress calls not global. An IPv6
address that carries an IPv4 address (IPv4-mapped, -compatible, -translated, NAT64, 6to4) is judged as that
IPv4 address.

Each delivery resolves the host again and connects to the address it checked, with TLS still verified for the
host name, so a DNS answer that changes between the check and the connection (rebinding) cannot redirect it.
Redirects are not followed, and the whole exchange (connect, TLS, request, answer) has 5 s.
"""

import contextlib
import csv
import ipaddress
import socket
import threading
import time
from dataclasses import dataclass
from http.client import HTTPException
from pathlib import Path
from urllib.parse import urlsplit

import urllib3
from django.conf import settings
from urllib3.connection import HTTPConnection, HTTPSConnection

from lftrack.errors import Unprocessable

TIMEOUT_SECONDS = 5.0
# Of a receiver's answer we read this much at most, and keep EXCERPT characters in the log.
READ_LIMIT = 16 * 1024
EXCERPT = 1000


class AddressRefused(Exception):
    """The URL's host resolves to an address webhooks may not reach; `str()` says why, for the log."""


# IPv6 prefixes whose last 32 bits are an IPv4 address a host or gateway may reach: IPv4-compatible
# (::127.0.0.1), IPv4-translated (::ffff:0:127.0.0.1) and NAT64's well-known prefix. Python 3.11
# calls them global whatever they carry.
_CARRIES_IPV4 = [ipaddress.ip_network(n) for n in ("::/96", "::ffff:0:0:0/96", "64:ff9b::/96")]
_GLOBAL_UNICAST = ipaddress.ip_network("2000::/3")
REGISTRIES = Path(__file__).resolve().parent / "iana"


def registry_blocks(name: str) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    """The blocks of one of IANA's special-purpose address registries (a CSV as IANA publishes it, in
    webhooks/iana/) that it does not mark globally reachable ("False", "N/A", or blank for a retired block).

    Python's ipaddress transcribes these by hand and lags: on 3.11 it calls 3fff::/20 and 5f00::/16 global. The
    registry itself is the maintained, complete list; docs/webhooks.md says how to refresh the copy.
    """
    with (REGISTRIES / name).open(newline="", encoding="utf-8") as registry:
        return [
            ipaddress.ip_network(block.split()[0])  # "192.0.0.0/24 [2]": a footnote follows the block
            for row in csv.DictReader(registry)
            if not row["Globally Reachable"].startswith("True")
            for block in row["Address Block"].split(",")  # "192.0.0.170/32, 192.0.0.171/32"
        ]


_NOT_GLOBAL = registry_blocks("iana-ipv4-special-registry-1.csv") + registry_blocks("iana-ipv6-special-registry-1.csv")


def address_allowed(address: str) -> bool:
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped  # ::ffff:127.0.0.1 is 127.0.0.1
        elif ip.sixtofour is not None:
            ip = ip.sixtofour  # 2002:7f00:1:: is 127.0.0.1 behind a 6to4 relay
        elif any(ip in network for network in _CARRIES_IPV4):
            ip = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        elif ip not in _GLOBAL_UNICAST:
            return False
    return ip.is_global and not ip.is_multicast and not any(ip in network for network in _NOT_GLOBAL)


def url_check(url: str) -> str:
    """The URL, if webhooks may be sent to it; 422 with the reason otherwise (at creation and change)."""
    parts = urlsplit(url)
    # urlsplit drops tabs and line breaks silently; a URL carrying them (or spaces, or other control
    # characters) is refused rather than stored as something else than what is sent to.
    if (
        parts.scheme not in ("http", "https")
        or not parts.hostname
        or any(c.isspace() or not c.isprintable() for c in url)
    ):
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
    """POST `body` to `url` through the address checked now; TIMEOUT_SECONDS for the whole exchange.

    The socket's timeout bounds each wait, which a receiver dripping its headers or its body a byte at a
    time would renew for ever: a timer cuts the connection at the deadline, whatever it is doing. What
    the receiver answered by then counts; no status line by then is a timeout."""
    started = time.monotonic()
    parts = urlsplit(url)
    try:
        address = resolve(parts.hostname, _port(parts))
    except (AddressRefused, Unprocessable) as refused:
        return Answer(status=None, duration_ms=0, error=f"refused: {refused}")
    if parts.scheme == "https":
        # OpenSSL checks the certificate against server_hostname (the name, not the address connected to).
        conn = HTTPSConnection(address, _port(parts), timeout=TIMEOUT_SECONDS, server_hostname=parts.hostname)
    else:
        conn = HTTPConnection(address, _port(parts), timeout=TIMEOUT_SECONDS)
    cut = threading.Event()
    deadline = threading.Timer(TIMEOUT_SECONDS, _cut, [conn, cut])
    deadline.start()
    try:
        try:
            # parse_url percent-encodes what a request line cannot carry (urllib3's pools do the same).
            conn.request(
                "POST",
                urllib3.util.parse_url(url).request_uri,
                body=body,
                headers={**headers, "Host": parts.netloc},
                preload_content=False,
            )
            response = conn.getresponse()
        except (urllib3.exceptions.HTTPError, HTTPException, OSError, ValueError) as exc:
            return Answer(status=None, duration_ms=_ms(started), error="timeout" if cut.is_set() else _describe(exc))
        excerpt = _read(response).decode("utf-8", "replace")[:EXCERPT]
        return Answer(status=response.status, duration_ms=_ms(started), excerpt=excerpt)
    finally:
        deadline.cancel()
        conn.close()


def _cut(conn: HTTPConnection, cut: threading.Event) -> None:
    cut.set()  # before the shutdown, which the blocked thread sees at once as a closed connection
    sock = conn.sock
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)  # wakes the thread blocked on it; close() would not


def _read(response) -> bytes:
    """At most READ_LIMIT bytes of the answer as sent (no decompression: a small gzip body cannot
    swell into gigabytes), keeping what came before a cut or a reset."""
    chunks, size = [], 0
    try:
        while size < READ_LIMIT:
            chunk = response.read1(READ_LIMIT - size, decode_content=False)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except (urllib3.exceptions.HTTPError, HTTPException, OSError, ValueError):
        pass
    return b"".join(chunks)


def _ms(started: float) -> int:
    return round((time.monotonic() - started) * 1000)


def _describe(exc: BaseException) -> str:
    """A network failure in one line, never a URL's query or credentials."""
    if isinstance(exc, urllib3.exceptions.NewConnectionError):  # a subclass of the timeout, for history's sake
        exc = exc.__cause__ or exc
    elif isinstance(exc, (urllib3.exceptions.TimeoutError, TimeoutError)):
        return "timeout"
    reason = getattr(exc, "reason", None)  # urllib3 wraps the cause; ssl's is a plain string
    if not isinstance(reason, BaseException):
        reason = exc
    return f"{type(reason).__name__}: {reason}"[:300]
