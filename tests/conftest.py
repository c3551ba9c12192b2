"""Fixtures: the acme / globex story, an API client, and helpers shared by every test module."""

import ipaddress
import json
import re
import shutil
import socket
import threading
from pathlib import Path
from unittest import mock

import pytest
from django.core import signals
from django.core.cache import cache
from django.core.handlers.wsgi import WSGIRequest
from django.db import close_old_connections, connection
from django.http import HttpResponse
from django.test import Client

from lftrack.ratelimit import breaker
from tests import flush
from tests.factories import ApiTokenFactory, MembershipFactory, UserFactory, WorkspaceFactory
from workspaces.models import Membership


def database_url() -> str:
    """The test database, for a process of its own."""
    db = connection.settings_dict
    password = f":{db['PASSWORD']}" if db["PASSWORD"] else ""
    socket_dir = db.get("OPTIONS", {}).get("host")  # the embedded server listens on a Unix socket only
    if socket_dir and not db["HOST"]:
        return f"postgres://{db['USER']}{password}@/{db['NAME']}?host={socket_dir}"
    return f"postgres://{db['USER']}{password}@{db['HOST']}:{db['PORT'] or 5432}/{db['NAME']}"


def self_signed_certificate(directory: Path, *names: str) -> tuple[Path, Path]:
    """(cert.pem, key.pem) in `directory`: a certificate for `names` (host names or IP addresses), signed by
    its own key and valid for an hour either side of now. Trust it by its file."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    def alternative(name: str) -> x509.GeneralName:
        try:
            return x509.IPAddress(ipaddress.ip_address(name))
        except ValueError:
            return x509.DNSName(name)

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([alternative(name) for name in names]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


def start_threads(count: int, target) -> tuple[list[threading.Thread], list]:
    """Start `count` threads on `target(i)`, released together by a barrier, for real races on PostgreSQL.

    Each thread closes its own database connection. `results[i]` is what `target(i)` returned, or
    the exception it raised (for the test to assert on, never swallowed).
    """
    barrier = threading.Barrier(count)
    results: list = [None] * count

    def run(i: int) -> None:
        try:
            barrier.wait(timeout=30)
            results[i] = target(i)
        except Exception as exc:
            results[i] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    return threads, results


def run_in_threads(count: int, target) -> list:
    """`start_threads`, then wait for all of them; the results in thread order."""
    threads, results = start_threads(count, target)
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads)
    return results


class ApiClient(Client):
    """A test client that sends JSON and an optional bearer token."""

    def post(self, path, data=None, *, token=None, content_type="application/json", raw=None, **extra):
        if token is not None:
            extra["HTTP_AUTHORIZATION"] = f"Bearer {getattr(token, 'secret', token)}"
        body = raw if raw is not None else json.dumps(data if data is not None else {})
        return super().post(path, body, content_type=content_type, **extra)

    def get(self, path, data=None, *, token=None, **extra):
        if token is not None:
            extra["HTTP_AUTHORIZATION"] = f"Bearer {getattr(token, 'secret', token)}"
        return super().get(path, data, **extra)


class WsgiClient(Client):
    """A test client through lftrack.wsgi.application, the entry point gunicorn serves, so through the redirect's
    path before Django's handler (clicks/wsgi.py); Django's test client enters after it."""

    def __init__(self, **defaults):
        super().__init__(**defaults)
        self.handler = self._through_wsgi

    @staticmethod
    def _through_wsgi(environ: dict) -> HttpResponse:
        from lftrack.wsgi import application

        answer: dict = {}
        request = WSGIRequest(dict(environ))  # the client's record of what it sent

        def start_response(status, headers, exc_info=None):
            answer.update(status=int(status[:3]), headers=headers)

        # As Django's test handler disconnects close_old_connections from the request signals (and this path
        # calls it itself): the test's transaction is this thread's connection, not to be closed in between.
        signals.request_started.disconnect(close_old_connections)
        signals.request_finished.disconnect(close_old_connections)
        try:
            with mock.patch("clicks.wsgi.close_old_connections"):
                result = application(environ, start_response)
                try:
                    body = b"".join(result)
                finally:
                    getattr(result, "close", lambda: None)()  # as a WSGI server does
        finally:
            signals.request_started.connect(close_old_connections)
            signals.request_finished.connect(close_old_connections)
        response = HttpResponse(body, status=answer["status"])
        del response["Content-Type"]
        for name, value in answer["headers"]:
            response[name] = value
        response.wsgi_request = request
        return response


@pytest.fixture(params=["django", "wsgi"])
def either_client(request) -> Client:
    """Each test that takes it runs twice: through Django's test client, and through lftrack.wsgi.application, the
    entry point gunicorn serves, whose GET /l/<key> is answered before Django's handler (clicks/wsgi.py)."""
    return Client() if request.param == "django" else WsgiClient()


def form_of(client, page: str, **data) -> dict:
    """What a browser posts from the back-office form at `page`: its one-time nonce (create forms act once) and `data`."""
    return {"nonce": re.search(r'name="nonce" value="([^"]+)"', client.get(page).content.decode()).group(1), **data}


def assert_api_error(response, status: int, message: str) -> None:
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith("application/json")
    assert response.json() == {"error": message}


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix):
    """The suite's own connections run without the statement timeout: creating and dropping the test
    database takes more than its 5 s on a loaded machine (the drop was cancelled, the database left
    behind, and the next run could not start). The timeout's behaviour is tested in servers of their own
    (tests/faults), which keep the environment's settings."""
    from django.conf import settings

    options = settings.DATABASES["default"].get("OPTIONS", {})
    if "options" in options:
        options["options"] = re.sub(r"-c statement_timeout=\S+\s*", "", options["options"]).strip()


@pytest.fixture(scope="session", autouse=True)
def _quick_flush():
    """Transactional tests end with tests/flush.py's flush: Django's result, a fraction of its time."""
    flush.install()


@pytest.fixture(autouse=True)
def _no_jobs_left(request, django_db_blocker):
    """The task engine's tables are not Django's to flush: a transactional test's jobs would outlive it, and
    show in the next test that reads the queue (the others' roll back with the test)."""
    yield
    marker = request.node.get_closest_marker("django_db")
    if "transactional_db" in request.fixturenames or (marker is not None and marker.kwargs.get("transaction")):
        with django_db_blocker.unblock(), connection.cursor() as cursor:
            cursor.execute("DELETE FROM procrastinate_jobs")


@pytest.fixture(autouse=True)
def _closed_breaker():
    """Each test starts with the rate limits' circuit breaker closed (it is per process)."""
    breaker.reset()
    yield
    breaker.reset()


@pytest.fixture(autouse=True)
def _fresh_cache():
    """Rate-limit counters live in the cache (Redis in CI): every test starts from zero."""
    cache.clear()


@pytest.fixture
def public_dns(monkeypatch):
    """Host names resolve to what the test sets in the returned dict (the machine has no resolver), a public
    address by default; an address literal resolves to itself. Webhook URLs are checked by resolving them."""
    answers: dict[str, list[str]] = {}

    def getaddrinfo(host, port, *args, **kwargs):
        try:
            addresses = [str(ipaddress.ip_address(host))]
        except ValueError:
            addresses = answers.get(host, ["93.184.215.14"])
        return [
            (socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port)) for a in addresses
        ]

    monkeypatch.setattr("webhooks.network.socket.getaddrinfo", getaddrinfo)
    return answers


@pytest.fixture
def api():
    return ApiClient()


@pytest.fixture
def acme(db):
    return WorkspaceFactory(slug="acme", name="Acme")


@pytest.fixture
def globex(db):
    return WorkspaceFactory(slug="globex", name="Globex")


@pytest.fixture
def alice(acme):
    user = UserFactory(username="alice")
    MembershipFactory(user=user, workspace=acme, role=Membership.Role.OWNER)
    return user


@pytest.fixture
def bob(acme):
    user = UserFactory(username="bob")
    MembershipFactory(user=user, workspace=acme, role=Membership.Role.EDITOR)
    return user


@pytest.fixture
def charlie(globex):
    user = UserFactory(username="charlie")
    MembershipFactory(user=user, workspace=globex, role=Membership.Role.OWNER)
    return user


@pytest.fixture
def acme_token(acme):
    """An ApiToken with its one-time secret on `.secret`."""
    return ApiTokenFactory(workspace=acme)


@pytest.fixture
def globex_token(globex):
    return ApiTokenFactory(workspace=globex)


CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"


@pytest.fixture(scope="session")
def _chromium():
    if not (shutil.which(CHROMIUM) and shutil.which(CHROMEDRIVER)):
        pytest.skip("needs Debian's chromium and chromium-driver (make test and .ci/run install them)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    # The machine's network is closed: without the background-networking flags Chromium stalls on lookups.
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1280,1000",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()


@pytest.fixture
def browser(_chromium, live_server):
    """Headless Chromium (selenium) with a clean cookie jar, pointed at the live test server."""
    _chromium.get(live_server.url + "/healthz")
    _chromium.delete_all_cookies()
    yield _chromium
    _chromium.delete_all_cookies()


def save_screenshot(driver, name: str) -> Path:
    """Keep a screenshot under test-artifacts/ for a person to look at after the run."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    driver.save_screenshot(str(path))
    return path
