"""GET /healthz."""
import pytest
from django.db import connection
from django.db.utils import OperationalError


@pytest.mark.django_db
def test_healthz_ok(client):
    resp = client.get("/healthz")
    assert resp.status_code == 200 and resp.json() == {"status": "ok"}


@pytest.mark.django_db
def test_healthz_503_when_the_database_is_down(client, monkeypatch):
    def down(*args, **kwargs):
        raise OperationalError("connection refused")

    monkeypatch.setattr(connection, "cursor", down)
    resp = client.get("/healthz")
    assert resp.status_code == 503 and resp.json() == {"status": "unavailable", "failed": ["database"]}


@pytest.mark.django_db
def test_healthz_503_when_redis_is_configured_but_down(client, settings):
    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": settings.REDIS_URL}}
    from django.core.cache import caches

    caches._settings = None  # pick up the overridden CACHES
    try:
        resp = client.get("/healthz")
    finally:
        caches._settings = None
    assert resp.status_code == 503 and resp.json() == {"status": "unavailable", "failed": ["redis"]}
