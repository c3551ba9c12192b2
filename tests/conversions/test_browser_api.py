"""POST /api/v1/browser/conversions: the public tracking key, leads only, CORS, rate limits, no identity takeover."""

import json

import pytest
from django.core.cache import cache
from django.test import override_settings

from conversions.models import ConversionEvent
from customers.models import Customer, CustomerActivity
from tests.conftest import assert_api_error
from tests.factories import ClickFactory, CustomerFactory

pytestmark = pytest.mark.django_db

URL = "/api/v1/browser/conversions"
SHOP = "https://shop.acme.example"


@pytest.fixture(autouse=True)
def _fresh_rate_limits():
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def acme(acme):
    acme.allowed_origins = f"{SHOP}\nhttps://www.acme.example/\n"
    acme.save()
    return acme


@pytest.fixture
def click(acme):
    return ClickFactory(link__post__workspace=acme)


def lead(workspace, click, **extra) -> dict:
    return {"key": workspace.tracking_key, "event": "lead", "click_id": click.click_id, **extra}


def send(api, body, *, origin=SHOP, content_type="application/json", **extra):
    if origin is not None:
        extra["HTTP_ORIGIN"] = origin
    return api.post(URL, raw=json.dumps(body), content_type=content_type, **extra)


def test_lead_is_recorded_against_the_click_and_answers_no_customer_data(api, acme, click):
    resp = send(api, lead(acme, click, customer={"email": "ada@example.com", "name": "Ada Lovelace"}))
    assert resp.status_code == 201, resp.content
    event = ConversionEvent.objects.get()
    assert resp.json() == {
        "id": event.pk,
        "event": "lead",
        "click_id": click.click_id,
        "link_id": click.link_id,
        "occurred_at": event.occurred_at.isoformat().replace("+00:00", "Z"),
    }
    assert (event.workspace, event.click, event.link, event.channel, event.event) == (
        acme,
        click,
        click.link,
        "pixel",
        "lead",
    )
    customer = event.customer
    # The public key may not name anyone: the name waits for a confirmed enrollment (tests/campaigns/test_double_opt_in.py).
    assert (customer.email, customer.name, customer.external_id, customer.source) == (
        "ada@example.com",
        "",
        "",
        "pixel",
    )
    assert "ada@example.com" not in resp.content.decode()


def test_key_in_the_header(api, acme, click):
    body = {"event": "lead", "click_id": click.click_id}
    resp = send(api, body, HTTP_X_TRACKING_KEY=acme.tracking_key)
    assert resp.status_code == 201
    assert ConversionEvent.objects.get().customer is None


def test_text_plain_body_as_sent_by_send_beacon(api, acme, click):
    resp = send(api, lead(acme, click, customer={"email": "ada@example.com"}), content_type="text/plain;charset=UTF-8")
    assert resp.status_code == 201, resp.content
    assert ConversionEvent.objects.get().customer.email == "ada@example.com"


@pytest.mark.parametrize("key", [None, "", "pk_wrong", 42, ["pk"], "x" * 5000])
def test_missing_or_wrong_key_is_401(api, acme, click, key):
    body = {"event": "lead", "click_id": click.click_id}
    if key is not None:
        body["key"] = key
    resp = send(api, body)
    assert_api_error(resp, 401, "unauthorized")
    assert "Access-Control-Allow-Origin" not in resp
    assert not ConversionEvent.objects.exists()


def test_wrong_header_key_is_401_even_with_a_good_body_key(api, acme, click):
    assert_api_error(send(api, lead(acme, click), HTTP_X_TRACKING_KEY="pk_wrong"), 401, "unauthorized")


def test_bearer_token_is_not_a_tracking_key(api, acme, click, acme_token):
    resp = send(api, {"event": "lead", "click_id": click.click_id}, HTTP_AUTHORIZATION=f"Bearer {acme_token.secret}")
    assert_api_error(resp, 401, "unauthorized")


def test_another_workspaces_key_does_not_reach_this_workspaces_click(api, acme, globex, click):
    globex.allowed_origins = SHOP
    globex.save()
    assert_api_error(send(api, lead(globex, click)), 422, "unknown click_id")
    assert not ConversionEvent.objects.exists()


@pytest.mark.parametrize("event", ["sale", "Lead", "", None, 1])
def test_leads_only(api, acme, click, event):
    resp = send(api, lead(acme, click, event=event, value_cents=49000))
    assert_api_error(resp, 422, "invalid event")
    assert not ConversionEvent.objects.exists()


def test_missing_event_is_invalid(api, acme, click):
    body = lead(acme, click)
    del body["event"]
    assert_api_error(send(api, body), 422, "invalid event")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"click_id": ""}, "click_id is required"),
        ({"click_id": None}, "click_id is required"),
        ({"click_id": "x" * 65}, "click_id is too long"),
        ({"click_id": "not-a-click"}, "unknown click_id"),
        ({"customer": {}}, "email is required"),
        ({"customer": {"name": "Ada"}}, "email is required"),
        ({"customer": {"email": ""}}, "email is required"),
        ({"customer": {"email": "not an email"}}, "invalid email"),
        ({"customer": {"email": 7}}, "email must be a string"),
        ({"customer": {"email": "ada@example.com", "name": "x" * 201}}, "name is too long"),
        ({"customer": "ada@example.com"}, "customer must be an object"),
    ],
)
def test_bad_input_is_422_and_stores_nothing(api, acme, click, body, message):
    assert_api_error(send(api, {**lead(acme, click), **body}), 422, message)
    assert not ConversionEvent.objects.exists()
    assert not Customer.objects.exists()


def test_unparseable_body_is_400(api, acme):
    resp = api.post(URL, raw="not json", content_type="text/plain", HTTP_X_TRACKING_KEY=acme.tracking_key)
    assert_api_error(resp, 400, "invalid JSON")


def test_form_encoded_body_is_415(api, acme, click):
    resp = api.post(URL, raw=f"key={acme.tracking_key}", content_type="application/x-www-form-urlencoded")
    assert_api_error(resp, 415, "unsupported media type")


def test_get_is_405(api):
    assert_api_error(api.get(URL), 405, "method not allowed")


# CORS


def test_preflight_from_an_allowed_origin_is_granted(api, acme):
    resp = api.options(
        URL,
        HTTP_ORIGIN=SHOP,
        HTTP_ACCESS_CONTROL_REQUEST_METHOD="POST",
        HTTP_ACCESS_CONTROL_REQUEST_HEADERS="content-type, x-tracking-key",
    )
    assert resp.status_code == 204
    assert resp.content == b""
    assert resp["Access-Control-Allow-Origin"] == SHOP
    assert resp["Access-Control-Allow-Methods"] == "POST, OPTIONS"
    assert resp["Access-Control-Allow-Headers"] == "Content-Type, X-Tracking-Key"
    assert resp["Access-Control-Max-Age"] == "7200"
    assert "Origin" in resp["Vary"]


def test_preflight_matches_origins_as_the_browser_writes_them(api, acme):
    # Stored as "https://www.acme.example/" (trailing slash); a browser sends no slash.
    resp = api.options(URL, HTTP_ORIGIN="https://www.acme.example", HTTP_ACCESS_CONTROL_REQUEST_METHOD="POST")
    assert resp["Access-Control-Allow-Origin"] == "https://www.acme.example"


@pytest.mark.parametrize(
    "origin",
    [
        "https://evil.example",
        "http://shop.acme.example",
        "https://shop.acme.example.evil.example",
        "https://shop.acme.example:8443",
        "null",
        "",
        "javascript:alert(1)",
    ],
)
def test_preflight_from_other_origins_gets_no_grant(api, acme, origin):
    resp = api.options(URL, HTTP_ORIGIN=origin, HTTP_ACCESS_CONTROL_REQUEST_METHOD="POST")
    assert resp.status_code == 204
    assert not [name for name in resp.headers if name.lower().startswith("access-control-")]
    assert "Origin" in resp["Vary"]


def test_post_from_an_allowed_origin_carries_the_cors_headers(api, acme, click):
    resp = send(api, lead(acme, click), origin=SHOP)
    assert resp.status_code == 201
    assert resp["Access-Control-Allow-Origin"] == SHOP
    assert "Origin" in resp["Vary"]
    assert "Access-Control-Allow-Credentials" not in resp


def test_errors_to_an_allowed_origin_are_readable_by_the_page(api, acme, click):
    resp = send(api, lead(acme, click, event="sale"), origin=SHOP)
    assert_api_error(resp, 422, "invalid event")
    assert resp["Access-Control-Allow-Origin"] == SHOP


def test_post_from_another_origin_is_refused_and_stores_nothing(api, acme, click):
    resp = send(api, lead(acme, click), origin="https://evil.example")
    assert_api_error(resp, 403, "origin not allowed")
    assert "Access-Control-Allow-Origin" not in resp
    assert "Origin" in resp["Vary"]
    assert not ConversionEvent.objects.exists()


def test_an_origin_allowed_by_another_workspace_is_not_allowed_for_this_key(api, acme, globex, click):
    globex.allowed_origins = "https://globex.example"
    globex.save()
    preflight = api.options(URL, HTTP_ORIGIN="https://globex.example", HTTP_ACCESS_CONTROL_REQUEST_METHOD="POST")
    assert preflight["Access-Control-Allow-Origin"] == "https://globex.example"
    resp = send(api, lead(acme, click), origin="https://globex.example")
    assert_api_error(resp, 403, "origin not allowed")
    assert not ConversionEvent.objects.exists()


def test_a_workspace_without_allowed_origins_takes_no_browser_requests(api, acme, click):
    acme.allowed_origins = ""
    acme.save()
    assert_api_error(send(api, lead(acme, click)), 403, "origin not allowed")


def test_requests_without_origin_are_not_from_a_page_and_need_the_key_only(api, acme, click):
    resp = send(api, lead(acme, click), origin=None)
    assert resp.status_code == 201
    assert "Access-Control-Allow-Origin" not in resp


# Rate limits


@override_settings(RATELIMIT_BROWSER_IP="2/m")
def test_per_ip_limit_counts_every_request_even_with_a_wrong_key(api, acme, click):
    assert send(api, lead(acme, click)).status_code == 201
    assert_api_error(send(api, {"key": "pk_wrong"}), 401, "unauthorized")
    resp = send(api, lead(acme, click))
    assert_api_error(resp, 429, "rate_limited")
    assert 1 <= int(resp["Retry-After"]) <= 60
    assert ConversionEvent.objects.count() == 1
    # Another address is not held back.
    assert send(api, lead(acme, click), REMOTE_ADDR="203.0.113.9").status_code == 201


@override_settings(RATELIMIT_BROWSER_KEY="2/m")
def test_per_key_limit_holds_across_addresses(api, acme, globex, click):
    for address in ("203.0.113.1", "203.0.113.2"):
        assert send(api, lead(acme, click), REMOTE_ADDR=address).status_code == 201
    resp = send(api, lead(acme, click), REMOTE_ADDR="203.0.113.3")
    assert_api_error(resp, 429, "rate_limited")
    assert resp["X-RateLimit-Limit"] == "2"
    assert ConversionEvent.objects.count() == 2
    # Another workspace's key has its own budget.
    globex.allowed_origins = SHOP
    globex.save()
    other = ClickFactory(link__post__workspace=globex)
    assert send(api, lead(globex, other), REMOTE_ADDR="203.0.113.4").status_code == 201


def test_rate_limit_headers_on_success(api, acme, click):
    resp = send(api, lead(acme, click))
    assert resp["X-RateLimit-Limit"] == "600"
    assert resp["X-RateLimit-Remaining"] == "599"


# The key is public: it may create or match by email and fill blanks, never take over an identity.


def test_an_external_id_sent_to_the_pixel_is_never_moved_nor_attached(api, acme, click):
    holder = CustomerFactory(workspace=acme, email="holder@example.com", external_id="user_42")
    known = CustomerFactory(workspace=acme, email="known@example.com", external_id="")
    for email in ("new@example.com", "known@example.com"):
        body = lead(acme, click, customer={"email": email, "external_id": "user_42"})
        assert send(api, body).status_code == 201
    holder.refresh_from_db()
    known.refresh_from_db()
    assert holder.external_id == "user_42"
    assert known.external_id == ""
    assert Customer.objects.get(email="new@example.com").external_id == ""
    assert not CustomerActivity.objects.filter(kind__startswith="external_id_moved").exists()


def test_an_external_id_holder_without_email_is_not_claimed(api, acme, click):
    anonymous = CustomerFactory(workspace=acme, email="", external_id="user_7")
    send(api, lead(acme, click, customer={"email": "claim@example.com", "external_id": "user_7"}))
    anonymous.refresh_from_db()
    assert (anonymous.email, anonymous.external_id) == ("", "user_7")
    assert Customer.objects.get(email="claim@example.com").external_id == ""


def test_the_pixel_neither_overwrites_nor_fills_a_name(api, acme, click):
    named = CustomerFactory(workspace=acme, email="Ada@Example.com", name="Ada Lovelace")
    blank = CustomerFactory(workspace=acme, email="grace@example.com", name="")
    send(api, lead(acme, click, customer={"email": "ada@example.com", "name": "Mallory"}))
    send(api, lead(acme, click, customer={"email": "grace@example.com", "name": "URGENT: verify at evil.example"}))
    named.refresh_from_db()
    blank.refresh_from_db()
    assert (named.email, named.name, named.source) == ("Ada@Example.com", "Ada Lovelace", "api")
    assert blank.name == ""  # an attacker's text never reaches what mail prints
    assert [e.customer_id for e in ConversionEvent.objects.order_by("pk")] == [named.pk, blank.pk]
    assert Customer.objects.count() == 2


def test_a_second_lead_on_the_same_click_is_a_second_event(api, acme, click):
    body = lead(acme, click, customer={"email": "ada@example.com"})
    assert send(api, body).status_code == 201
    assert send(api, body).status_code == 201
    assert ConversionEvent.objects.filter(click=click).count() == 2
    assert Customer.objects.count() == 1
