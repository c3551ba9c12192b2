"""GET /healthz (liveness) and GET /readyz (readiness)."""

import threading
import tomllib
from pathlib import Path

import pytest
from django.core.cache import caches
from django.db.utils import OperationalError

from lftrack import views
from lftrack.ratelimit import breaker


def project_version() -> str:
    """The version pyproject.toml sets (the installed one must be it: make reinstalls when the file changes)."""
    return tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())["project"]["version"]


@pytest.mark.django_db
def test_healthz_answers_whatever_the_dependencies(client, monkeypatch):
    monkeypatch.setattr(views, "_database_answers", lambda timeout: pytest.fail("liveness asks no database"))
    resp = client.get("/healthz")
    assert resp.status_code == 200 and resp.json() == {"status": "ok", "version": project_version()}


@pytest.mark.django_db(transaction=True)
def test_readyz_ok_when_the_database_answers(client):
    resp = client.get("/readyz")
    assert resp.status_code == 200 and resp.json()["status"] == "ok" and resp.json()["database"] == "ok"


@pytest.mark.django_db
def test_readyz_503_when_the_database_refuses(client, monkeypatch):
    class Down:
        def cursor(self):
            raise OperationalError("connection refused")

        def close(self):
            pass

    monkeypatch.setattr(views, "connections", {"default": Down()})
    resp = client.get("/readyz")
    assert resp.status_code == 503 and resp["Retry-After"] == "5"
    assert {key: resp.json()[key] for key in ("status", "database")} == {
        "status": "unavailable",
        "database": "unavailable",
    }


@pytest.mark.django_db
def test_readyz_503_within_its_deadline_when_the_database_hangs(client, monkeypatch, settings):
    settings.READY_TIMEOUT = 0.2
    release = threading.Event()

    class Hung:
        def cursor(self):
            release.wait(10)
            raise OperationalError("gone")

        def close(self):
            pass

    monkeypatch.setattr(views, "connections", {"default": Hung()})
    try:
        assert client.get("/readyz").status_code == 503
        assert client.get("/readyz").status_code == 503  # the stuck probe is not joined by another
    finally:
        release.set()


@pytest.mark.django_db(transaction=True)
def test_readyz_reports_redis_but_does_not_require_it(client, settings):
    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": settings.REDIS_URL}
    }
    caches._settings = None  # pick up the overridden CACHES
    try:
        resp = client.get("/readyz")
    finally:
        caches._settings = None
    assert resp.status_code == 200 and resp.json() == {"status": "ok", "database": "ok", "redis": "unavailable"}
    assert not breaker.is_open


@pytest.mark.django_db
def test_the_home_page_says_what_this_is_and_where_to_go(client):
    resp = client.get("/")
    page = resp.content.decode()
    assert resp.status_code == 200 and "Link tracking, conversions and campaign sequences" in page
    for href in ('href="/admin/"', 'href="/api/v1/openapi.json"', "/lf.js"):
        assert href in page


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("path", ["/healthz", "/readyz"])
def test_probes_answer_a_node_asked_by_address_over_http(client, settings, path):
    """Load balancers probe each node by its address, over http: with the production host and https settings
    the probes answer, while a page asked the same way is still refused (400) or sent to https (301)."""
    settings.ALLOWED_HOSTS = ["track.example.com"]
    settings.SECURE_SSL_REDIRECT = True
    resp = client.get(path, HTTP_HOST="10.0.0.5:8000")
    assert (resp.status_code, resp.json()["status"]) == (200, "ok")
    assert resp["X-Request-ID"]
    assert client.get("/", HTTP_HOST="10.0.0.5:8000").status_code == 400
    assert client.get("/", HTTP_HOST="track.example.com")["Location"] == "https://track.example.com/"
