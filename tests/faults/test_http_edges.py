"""Bodies at the edges, through gunicorn: a refused body leaves the connection usable, chunked bodies are read."""

import http.client
import json

import pytest

from conversions.models import ConversionEvent
from tests.factories import ApiTokenFactory, ClickFactory

pytestmark = pytest.mark.fault


@pytest.fixture
def sale(acme):
    token = ApiTokenFactory(workspace=acme)
    click = ClickFactory(link__post__workspace=acme)
    body = json.dumps({"event": "sale", "click_id": click.click_id, "value_cents": 100}).encode()
    return {"Authorization": f"Bearer {token.secret}", "Content-Type": "application/json"}, body


@pytest.mark.parametrize("size", [65 * 1024, 1024 * 1024], ids=["65KiB", "1MiB"])
def test_after_a_413_the_same_connection_takes_the_next_request(gunicorn, sale, size):
    headers, body = sale
    host, port = gunicorn.removeprefix("http://").split(":")
    # http.client reuses its one connection without checking it first, as a pooled client does when
    # its next request follows at once: a connection the server dropped fails that request.
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        connection.request("POST", "/api/v1/conversions", body=b" " * size, headers=headers)
        too_big = connection.getresponse()
        assert (too_big.status, json.loads(too_big.read())) == (413, {"error": "request too large"})
        for _ in range(3):
            connection.request("POST", "/api/v1/conversions", body=body, headers=headers)
            answer = connection.getresponse()
            assert answer.status == 201, answer.read()
            answer.read()
    finally:
        connection.close()
    assert ConversionEvent.objects.count() == 3


def chunked_post(base: str, headers: dict, chunks: list[bytes]) -> tuple[int, dict]:
    host, port = base.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        connection.request("POST", "/api/v1/conversions", body=iter(chunks), headers=headers, encode_chunked=True)
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


def test_a_chunked_body_is_read(gunicorn, sale):
    headers, body = sale
    status, answer = chunked_post(gunicorn, {**headers, "Transfer-Encoding": "chunked"}, [body[:10], body[10:]])
    assert status == 201 and answer["event"] == "sale"
    assert ConversionEvent.objects.get().value_cents == 100


def test_a_chunked_body_over_the_limit_is_413_and_stores_nothing(gunicorn, sale):
    headers, _ = sale
    status, answer = chunked_post(gunicorn, {**headers, "Transfer-Encoding": "chunked"}, [b" " * 40_000] * 2)
    assert (status, answer) == (413, {"error": "request too large"})
    assert not ConversionEvent.objects.exists()


def test_a_chunked_body_to_the_campaign_leads_endpoint_is_read(gunicorn, sale, acme):
    from tests.factories import CampaignFactory

    headers, _ = sale
    CampaignFactory(workspace=acme, slug="spring")
    host, port = gunicorn.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    body = json.dumps({"email": "ada@example.com"}).encode()
    connection.request(
        "POST", "/api/v1/campaigns/spring/leads", body=iter([body]), headers=headers, encode_chunked=True
    )
    response = connection.getresponse()
    assert response.status == 201 and json.loads(response.read())["outcome"] == "created"
