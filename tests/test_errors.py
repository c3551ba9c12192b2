"""Every non-2xx answer under /api/v1 is `{"error": ...}` with its documented message (docs/api.md)."""

import pytest

from tests.conftest import assert_api_error
from tests.factories import ClickFactory

pytestmark = pytest.mark.django_db

URL = "/api/v1/conversions"


@pytest.mark.parametrize(
    "raw",
    [
        "{",
        "not json",
        "[]",
        '"a string"',
        "42",
        "null",
        "",
        '{"a": NaN}',
        "[" * 5000 + "]" * 5000,
        '{"a": "\\u0000"}',
        '{"a": "\\ud800"}',
    ],
)
def test_unparseable_or_non_object_bodies_are_400(api, acme_token, raw):
    assert_api_error(api.post(URL, raw=raw, token=acme_token), 400, "invalid JSON")


def nested(depth: int) -> dict:
    """A JSON object nested `depth` deep, top level included."""
    document: dict = {}
    for _ in range(depth - 1):
        document = {"a": document}
    return document


def test_meta_nested_too_deep_for_the_encoders_is_400_not_500(api, acme_token):
    from conversions.models import ConversionEvent

    click = ClickFactory(link__post__workspace=acme_token.workspace)
    # 900 levels parse, but used to overflow Python's recursion when meta's size was measured: a 500.
    for depth in (102, 900):
        body = {"event": "lead", "click_id": click.click_id, "meta": nested(depth - 1)}
        assert_api_error(api.post(URL, body, token=acme_token), 400, "invalid JSON")
    assert not ConversionEvent.objects.exists()


def test_meta_nested_100_deep_is_stored(api, acme_token):
    from conversions.models import ConversionEvent

    click = ClickFactory(link__post__workspace=acme_token.workspace)
    meta = nested(99)  # the body is level 1
    resp = api.post(URL, {"event": "lead", "click_id": click.click_id, "meta": meta}, token=acme_token)
    assert resp.status_code == 201, resp.content
    assert ConversionEvent.objects.get().meta == meta


def test_invalid_utf8_is_400(api, acme_token):
    assert_api_error(api.post(URL, raw=b'{"event": "\xff"}', token=acme_token), 400, "invalid JSON")


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", "application/xml", ""])
def test_other_media_types_are_415(api, acme_token, content_type):
    resp = api.post(URL, raw='{"event": "lead"}', content_type=content_type, token=acme_token)
    assert_api_error(resp, 415, "unsupported media type")


def test_json_with_charset_is_accepted(api, acme_token):
    click = ClickFactory(link__post__workspace=acme_token.workspace)
    resp = api.post(
        URL,
        {"event": "lead", "click_id": click.click_id},
        content_type="application/json; charset=utf-8",
        token=acme_token,
    )
    assert resp.status_code == 201


def test_unknown_route_is_404(api, acme_token):
    assert_api_error(api.get("/api/v1/nothing-here", token=acme_token), 404, "not found")
    assert_api_error(api.post("/api/v1/conversions/", {}, token=acme_token), 404, "not found")


@pytest.mark.parametrize("method", ["put", "patch", "delete"])  # GET lists them (tests/conversions/test_read.py)
def test_wrong_method_is_405(api, acme_token, method):
    resp = getattr(api, method)(URL, HTTP_AUTHORIZATION=f"Bearer {acme_token.secret}")
    assert_api_error(resp, 405, "method not allowed")


def test_body_over_64_kib_is_413_and_stores_nothing(api, acme_token):
    from conversions.models import ConversionEvent

    click = ClickFactory(link__post__workspace=acme_token.workspace)
    body = '{{"event": "lead", "click_id": "{}", "event_name": "{}"}}'.format(click.click_id, "x" * 66_000)
    assert_api_error(api.post(URL, raw=body, token=acme_token), 413, "request too large")
    assert not ConversionEvent.objects.exists()


def test_unexpected_error_is_500_without_a_trace(api, acme_token, monkeypatch, caplog):
    def explode(**kwargs):
        raise RuntimeError("secret internals")

    monkeypatch.setattr("conversions.api.conversion_record", explode)
    click = ClickFactory(link__post__workspace=acme_token.workspace)
    resp = api.post(URL, {"event": "lead", "click_id": click.click_id}, token=acme_token)
    assert_api_error(resp, 500, "internal error")
    assert b"secret internals" not in resp.content and b"Traceback" not in resp.content
    assert acme_token.secret not in caplog.text


def test_errors_outside_the_api_stay_html(client, db):
    resp = client.get("/no-such-page")
    assert resp.status_code == 404
    assert not resp["Content-Type"].startswith("application/json")


def test_nul_in_the_url_is_refused(api, acme_token, client):
    assert_api_error(api.get("/api/v1/conversions?x=%00", token=acme_token), 400, "bad request")
    assert client.get("/admin/?q=%00").status_code == 400


@pytest.mark.parametrize(
    ("method", "path", "header"),
    [
        ("post", "/api/v1/browser/conversions", "HTTP_X_TRACKING_KEY"),  # a key lookup: was a 500 on PostgreSQL
        ("options", "/api/v1/browser/conversions", "HTTP_ORIGIN"),  # the preflight's origin lookup: the same
        ("post", URL, "HTTP_IDEMPOTENCY_KEY"),
    ],
)
def test_nul_in_a_header_is_refused(api, acme, method, path, header):
    resp = getattr(api, method)(path, **{header: "pk_\x00abc"})
    assert_api_error(resp, 400, "bad request")


def test_malformed_content_length_is_400(api, acme_token):
    assert_api_error(api.post(URL, {}, token=acme_token, CONTENT_LENGTH="abc"), 400, "bad request")
