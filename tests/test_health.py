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
    assert resp.status_code == 503 and resp.json() == {"status": "unavailable"}
