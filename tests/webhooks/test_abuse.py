"""Webhooks against hostile receivers and URLs: address forms that hide a private address, endless and
dripping answers, compressed bombs, control characters, secrets kept out of the log, the endpoint cap."""

import gzip
import logging
import socket
import threading
import time

import pytest
from django.test import override_settings

from customers.services import customer_match
from tests.conftest import assert_api_error, self_signed_certificate
from tests.webhooks.conftest import work
from webhooks import network
from webhooks.models import Attempt, Delivery, Endpoint
from webhooks.services import endpoint_create

URL = "/api/v1/webhooks"
PRIVATE = "url resolves to a private, loopback or link-local address"


def read_request(conn) -> bytes:
    """The whole request (headers, then Content-Length bytes): a server that closes with some of it unread
    makes the kernel reset the connection, and the client may see that instead of the answer."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        (int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")), 0
    )
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        body += chunk
    return data


class RawReceiver:
    """A loopback TCP server that answers each connection with the bytes `behaviour()` yields; counts the
    bytes it sent, and keeps what went wrong in its threads for the test to see (`errors`)."""

    def __init__(self, behaviour):
        self.sent = 0
        self.errors: list[BaseException] = []
        self.answering: list[threading.Thread] = []
        self.server = socket.create_server(("127.0.0.1", 0))
        self.behaviour = behaviour
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            self.answering.append(threading.Thread(target=self._answer, args=(conn,), daemon=True))
            self.answering[-1].start()

    def _answer(self, conn):
        with conn:
            read_request(conn)
            try:
                for piece in self.behaviour():
                    conn.sendall(piece)
                    self.sent += len(piece)
            except OSError:  # we hung up on it
                pass
            except Exception as exc:  # a broken behaviour: the test fails, not a traceback at the end of the run
                self.errors.append(exc)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.getsockname()[1]}/hook"

    def close(self):
        self.server.close()


@pytest.fixture
def raw():
    servers = []

    def start(behaviour):
        servers.append(RawReceiver(behaviour))
        return servers[-1]

    yield start
    for server in servers:
        server.close()
        for thread in server.answering:
            thread.join(10)
        assert not server.errors, server.errors


def endless():
    yield b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n"
    chunk = b"x" * 65536
    for _ in range(100_000):  # 6.5 GB
        yield b"10000\r\n" + chunk + b"\r\n"


def drip(head: bytes, *, pause: float = 0.05):
    def behaviour():
        yield from (bytes([b]) for b in head[:1])
        for b in head[1:]:
            time.sleep(pause)
            yield bytes([b])
        for _ in range(10_000):
            time.sleep(pause)
            yield b"x"

    return behaviour


@pytest.fixture
def quick(monkeypatch, settings):
    """Receivers on loopback allowed, and a 0.5 s deadline instead of 5 s so the tests stay fast."""
    settings.WEBHOOKS_ALLOW_PRIVATE_NETWORKS = True
    settings.DEBUG = True
    monkeypatch.setattr(network, "TIMEOUT_SECONDS", 0.5)


def test_the_deadline_is_five_seconds_for_the_whole_exchange():
    assert network.TIMEOUT_SECONDS == 5.0


@pytest.mark.usefixtures("quick")
def test_an_endless_answer_is_read_to_16_kib_and_its_excerpt_kept_to_1000_characters(raw):
    receiver = raw(endless)
    started = time.monotonic()
    answer = network.post(receiver.url, b"{}", {})
    assert time.monotonic() - started < 2  # not the 6.5 GB
    assert answer.status == 200 and answer.excerpt == "x" * 1000 and answer.error == ""
    time.sleep(0.2)
    assert receiver.sent < 20 * 2**20  # it stopped when we hung up: what it sent is what the sockets buffer


@pytest.mark.usefixtures("quick")
def test_a_compressed_bomb_is_not_inflated(raw):
    bomb = gzip.compress(b"\0" * 50 * 2**20)  # 50 MiB in 50 KiB
    receiver = raw(
        lambda: [b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n" % len(bomb), bomb]
    )
    answer = network.post(receiver.url, b"{}", {})
    assert answer.status == 200 and len(answer.excerpt) == 1000


@pytest.mark.usefixtures("quick")
def test_a_receiver_dripping_its_body_is_cut_at_the_deadline_and_its_status_counts(raw):
    receiver = raw(drip(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n", pause=0.001))
    started = time.monotonic()
    answer = network.post(receiver.url, b"{}", {})
    assert 0.5 <= time.monotonic() - started < 4  # the drip would last 10 s (slack for a loaded machine)
    assert answer.status == 200 and answer.excerpt.startswith("x")


@pytest.mark.usefixtures("quick")
def test_a_receiver_dripping_its_headers_times_out(raw):
    receiver = raw(drip(b"HTTP/1.1 200 OK\r\n" + b"X-Slow: yes\r\n" * 1000))
    started = time.monotonic()
    answer = network.post(receiver.url, b"{}", {})
    assert 0.5 <= time.monotonic() - started < 4  # the drip would last minutes (slack for a loaded machine)
    assert answer == network.Answer(status=None, duration_ms=answer.duration_ms, error="timeout")


@pytest.mark.usefixtures("quick")
def test_a_receiver_that_never_answers_times_out(raw):
    receiver = raw(lambda: (time.sleep(3) or b"" for _ in range(1)))  # 3 s of silence, then it hangs up
    answer = network.post(receiver.url, b"{}", {})
    assert answer.status is None and answer.error == "timeout" and 500 <= answer.duration_ms < 2000


@pytest.mark.usefixtures("quick")
def test_garbage_instead_of_http_is_a_failed_attempt_not_a_crash(raw):
    receiver = raw(lambda: [b"SSH-2.0-OpenSSH_9.6\r\n"])
    answer = network.post(receiver.url, b"{}", {})
    assert answer.status is None and answer.error.startswith("BadStatusLine")


# Without the fake resolver: the machine's own getaddrinfo reads these numeric forms (inet_aton) as 127.0.0.1,
# 0.0.0.0 and 169.254.169.254.
@pytest.mark.parametrize(
    "host",
    [
        "2130706433",
        "0x7f000001",
        "0177.0.0.1",
        "127.1",
        "017700000001",
        "0",
        "0.0.0.0",
        "[::]",
        "[::ffff:7f00:1]",
        "[::127.0.0.1]",
        "[::ffff:0:127.0.0.1]",
        "[64:ff9b::a9fe:a9fe]",
        "[2002:a9fe:a9fe::]",
        "[fe80::1]",
        "[fd00:ec2::254]",
        "192.0.0.170",
        "[64:ff9b:1::a00:1]",
        "localhost",
        "169.254.169.254",
        "2852039166",
        "[fec0::1]",
        "[5f00::1]",
        "[3fff::1]",  # site-local, SRv6 SIDs, documentation: global to Python 3.11
    ],
)
@pytest.mark.django_db
def test_every_spelling_of_a_private_address_is_refused(api, acme_token, host):
    resp = api.post(URL, {"url": f"https://{host}/hook", "event_types": ["sale.created"]}, token=acme_token)
    assert_api_error(resp, 422, PRIVATE)
    assert not Endpoint.objects.exists()


@pytest.mark.parametrize(
    "url",
    [
        "https://crm.example.com/hook\r\nX-Injected: 1",
        "https://crm.example.com/a b",
        "https://crm.example.com/\tx",
        "https://crm.example.com/\x7f",
        "https://crm.example.com\n.evil.example/",
    ],
)
@pytest.mark.django_db
def test_control_characters_and_spaces_in_a_url_are_refused(api, acme_token, public_dns, url):
    resp = api.post(URL, {"url": url, "event_types": ["sale.created"]}, token=acme_token)
    assert_api_error(resp, 422, "url must be an absolute https URL")
    assert not Endpoint.objects.exists()


@pytest.mark.django_db
def test_a_workspace_has_at_most_the_configured_number_of_endpoints(api, acme_token, public_dns):
    with override_settings(WEBHOOK_ENDPOINTS_PER_WORKSPACE=2):
        for _ in range(2):
            assert (
                api.post(
                    URL, {"url": "https://crm.example.com/h", "event_types": ["sale.created"]}, token=acme_token
                ).status_code
                == 201
            )
        resp = api.post(URL, {"url": "https://crm.example.com/h", "event_types": ["sale.created"]}, token=acme_token)
    assert_api_error(resp, 422, "a workspace has at most 2 webhook endpoints")
    assert Endpoint.objects.count() == 2


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("local_hooks")
def test_secrets_never_reach_the_log_or_the_delivery_log(acme, caplog):
    """A failing endpoint whose URL carries a key: the attempt rows and the log lines name neither that key
    nor the signing secret, and each failure is one log line."""
    closed = socket.create_server(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()  # nothing listens: connection refused
    issued = endpoint_create(
        workspace=acme, url=f"http://127.0.0.1:{port}/hook?key=s3cr3t-in-url", event_types=["customer.created"]
    )
    customer_match(workspace=acme, channel="api", email="ada.lovelace@example.com")
    with caplog.at_level(logging.DEBUG):
        work(until=lambda: Attempt.objects.count() >= 3)
    errors = list(Attempt.objects.values_list("error", flat=True))
    assert errors and all(e == "ConnectionRefusedError: [Errno 111] Connection refused" for e in errors)
    text = " ".join(errors) + "\n".join(f"{r.getMessage()} {r.__dict__} {r.exc_text or ''}" for r in caplog.records)
    for secret in ("s3cr3t-in-url", issued.secret, issued.secret.removeprefix("whsec_"), "ada.lovelace"):
        assert secret not in text
    lines = [r for r in caplog.records if r.name == "lftrack.webhooks" and r.levelno >= logging.WARNING]
    assert [r.getMessage() for r in lines] == ["webhook attempt failed"] * len(errors)
    assert [(r.attempt, r.status, r.error) for r in lines] == [(n, None, e) for n, e in enumerate(errors, 1)]
    assert Delivery.objects.get().state == "pending"


@pytest.fixture
def tls_receiver(tmp_path):
    """An https receiver on loopback whose certificate names hooks.example.com (self-signed); records the SNI."""
    import ssl

    cert, key = self_signed_certificate(tmp_path, "hooks.example.com")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    names = []
    context.sni_callback = lambda sock, server_name, ctx: names.append(server_name)

    def answer():
        yield b"HTTP/1.1 204 No Content\r\n\r\n"

    server = socket.create_server(("127.0.0.1", 0))

    def serve():
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            try:
                with context.wrap_socket(conn, server_side=True) as tls:
                    read_request(tls)
                    tls.sendall(b"".join(answer()))
            except (OSError, ssl.SSLError):
                pass

    threading.Thread(target=serve, daemon=True).start()
    yield server.getsockname()[1], cert, names
    server.close()


@pytest.mark.usefixtures("quick")
def test_https_goes_to_the_checked_address_and_verifies_the_hosts_certificate(tls_receiver, public_dns, monkeypatch):
    port, cert, names = tls_receiver
    public_dns["hooks.example.com"] = ["127.0.0.1"]
    untrusted = network.post(f"https://hooks.example.com:{port}/hook", b"{}", {})
    assert untrusted.status is None and "CERTIFICATE_VERIFY_FAILED" in untrusted.error
    assert untrusted.error.startswith("SSLCertVerificationError")
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # the system's trust store, as OpenSSL reads it
    trusted = network.post(f"https://hooks.example.com:{port}/hook", b"{}", {})
    assert trusted.status == 204 and names[-1] == "hooks.example.com"
    public_dns["other.example.com"] = ["127.0.0.1"]  # the same address under a name the certificate lacks
    assert "CERTIFICATE_VERIFY_FAILED" in network.post(f"https://other.example.com:{port}/hook", b"{}", {}).error
