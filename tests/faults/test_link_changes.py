"""Two real servers redirect a link; once a change through the API returns, both follow it on the next click:
a new destination, a new key, an expiry, a delete (docs/api.md, "Links")."""

import json

import pytest
import requests

from clicks.models import Click
from tests.conftest import database_url
from tests.factories import ApiTokenFactory
from tests.faults.conftest import running_gunicorn

pytestmark = [pytest.mark.fault, pytest.mark.django_db(transaction=True)]


def _visit(base: str, key: str) -> tuple[int, str]:
    resp = requests.get(f"{base}/l/{key}", allow_redirects=False, timeout=10)
    return resp.status_code, resp.headers.get("Location", "").split("lf_cid=")[0]


def _api(base: str, token, method: str, path: str, body: dict | None = None) -> requests.Response:
    headers = {"Authorization": f"Bearer {token.secret}", "Content-Type": "application/json"}
    return requests.request(method, f"{base}/api/v1{path}", data=json.dumps(body or {}), headers=headers, timeout=10)


def test_both_servers_follow_each_change_at_the_next_click(acme):
    token = ApiTokenFactory(workspace=acme)
    with (
        running_gunicorn(database=database_url()) as (first, _),
        running_gunicorn(database=database_url()) as (second, _),
    ):
        made = _api(first, token, "POST", "/links", {"destination": "https://e.com/a", "key": "qr"})
        assert made.status_code == 201, made.text
        link = made.json()["id"]
        for _ in range(3):  # each server has served the link, and kept whatever it keeps of it
            assert _visit(first, "qr") == _visit(second, "qr") == (302, "https://e.com/a?")

        changed = _api(second, token, "PATCH", f"/links/{link}", {"destination": "https://e.com/b"})
        assert changed.status_code == 200, changed.text
        assert _visit(first, "qr") == _visit(second, "qr") == (302, "https://e.com/b?")

        assert _api(first, token, "PATCH", f"/links/{link}", {"key": "qr2"}).status_code == 200
        assert _visit(second, "qr")[0] == _visit(first, "qr")[0] == 404
        assert _visit(second, "qr2") == (302, "https://e.com/b?")

        expired = {"expires_at": "2020-01-01T00:00:00Z", "fallback_url": "https://e.com/over"}
        assert _api(first, token, "PATCH", f"/links/{link}", expired).status_code == 200
        assert _visit(first, "qr2") == _visit(second, "qr2") == (302, "https://e.com/over")
        clicks = Click.objects.count()

        assert _api(second, token, "DELETE", f"/links/{link}").status_code == 204
        assert _visit(first, "qr2")[0] == _visit(second, "qr2")[0] == 404
    assert clicks == 9 and Click.objects.count() == 9  # 6 + 2 + 1: none once expired or deleted
