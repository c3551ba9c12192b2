"""clicks/wsgi.py: GET /l/<key> answered before Django's handler, with what Django would have answered."""

import pytest
from django.core import signals
from django.db import OperationalError
from django.test import Client

from clicks import views as click_views
from clicks.models import Click
from tests.conftest import WsgiClient
from tests.factories import LinkFactory

pytestmark = pytest.mark.django_db

SECURE = {"HTTP_X_FORWARDED_PROTO": "https"}


def _answer(response) -> tuple[int, dict, bytes]:
    """What a client sees, less what differs by design from one answer to the next (the ids)."""
    headers = {name: value for name, value in response.items() if name != "X-Request-ID"}
    if "Location" in headers:
        headers["Location"] = headers["Location"].split("lf_cid=")[0]
    return response.status_code, headers, response.content


@pytest.fixture
def hardened(settings):
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.SECURE_HSTS_SECONDS = 31536000
    settings.SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    settings.SECURE_HSTS_PRELOAD = True


@pytest.mark.parametrize(
    ("method", "path", "extra"),
    [
        ("get", "known", {}),
        ("get", "known", SECURE),
        ("get", "known", {"QUERY_STRING": "lf_e=forged.token"}),
        ("get", "unknown", {}),
        ("get", "unknown", SECURE),
        ("head", "known", {}),
        ("post", "known", {}),
        ("get", "known", {"HTTP_HOST": "attacker.example"}),
        ("get", "known", {"QUERY_STRING": "x=%00"}),
    ],
)
def test_the_wsgi_path_answers_as_django_does(hardened, method, path, extra):
    link = LinkFactory(destination="https://shop.example.com/p?utm_source=news")
    url = f"/l/{link.key if path == 'known' else 'nosuchlink'}"
    through_django = getattr(Client(), method)(url, **extra)
    through_wsgi = getattr(WsgiClient(), method)(url, **extra)
    assert _answer(through_wsgi) == _answer(through_django)
    assert len(through_wsgi["X-Request-ID"]) == 32
    expected = 2 if (method, path) == ("get", "known") and "HTTP_HOST" not in extra and "%00" not in str(extra) else 0
    assert Click.objects.count() == expected


def test_a_get_of_a_link_skips_djangos_handler_and_anything_else_goes_through_it():
    link = LinkFactory()
    started = []

    def count(**kwargs):
        started.append(kwargs["environ"]["REQUEST_METHOD"])

    signals.request_started.connect(count)
    try:
        client = WsgiClient()
        assert client.get(f"/l/{link.key}").status_code == 302
        assert client.get("/l/nosuchlink").status_code == 404
        assert client.head(f"/l/{link.key}").status_code == 302
        assert client.get(f"/l/{link.key}", HTTP_HOST="attacker.example").status_code == 400
    finally:
        signals.request_started.disconnect(count)
    assert started == ["HEAD", "GET"]  # the GETs of a link were answered before Django's handler
    assert Click.objects.count() == 1


def test_the_proxys_request_id_is_kept():
    link = LinkFactory()
    response = WsgiClient().get(f"/l/{link.key}", HTTP_X_REQUEST_ID="edge-42")
    assert response["X-Request-ID"] == "edge-42"


def test_during_an_outage_a_served_link_still_redirects_and_an_unserved_one_is_503(monkeypatch):
    served, unserved = LinkFactory(), LinkFactory()
    client = WsgiClient(raise_request_exception=False)
    client.get(f"/l/{served.key}")

    def unavailable(**kwargs):
        raise OperationalError("the server closed the connection")

    monkeypatch.setattr(click_views, "click_follow", unavailable)
    response = client.get(f"/l/{served.key}")
    assert response.status_code == 302 and "lf_cid=" not in response["Location"]
    response = client.get(f"/l/{unserved.key}")
    assert response.status_code == 503 and response["Retry-After"] == "5"
    assert _answer(response) == _answer(Client(raise_request_exception=False).get(f"/l/{unserved.key}"))
