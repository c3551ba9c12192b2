"""Rate limits on POST /api/v1/conversions: per token and per client IP, 429 with Retry-After, nothing stored."""

import logging

import pytest
import time_machine
from django.test import override_settings

from conversions.models import ConversionEvent
from customers.models import Customer
from tests.conftest import assert_api_error
from tests.factories import ApiTokenFactory, ClickFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def frozen_clock():
    """Counters live in fixed windows: a test straddling a window's end would see its count reset."""
    with time_machine.travel("2026-03-01 12:00:00+00:00", tick=False):
        yield


URL = "/api/v1/conversions"


@pytest.fixture
def click(acme):
    return ClickFactory(link__post__workspace=acme, workspace=acme)


def sale(click, n=0):
    return {"event": "sale", "click_id": click.click_id, "value_cents": 100, "customer": {"email": f"p{n}@example.com"}}


def assert_rate_limited(resp, limit):
    assert_api_error(resp, 429, "rate_limited")
    retry_after = resp["Retry-After"]
    assert retry_after.isdigit() and 1 <= int(retry_after) <= 60
    assert (resp["X-RateLimit-Limit"], resp["X-RateLimit-Remaining"]) == (str(limit), "0")


@override_settings(RATELIMIT_CONVERSIONS_TOKEN="3/m", RATELIMIT_CONVERSIONS_IP="100/m")
def test_token_limit_answers_429_and_stores_nothing(api, acme_token, click):
    for n in range(3):
        resp = api.post(URL, sale(click, n), token=acme_token)
        assert resp.status_code == 201
        assert (resp["X-RateLimit-Limit"], resp["X-RateLimit-Remaining"]) == ("3", str(2 - n))
    assert_rate_limited(api.post(URL, sale(click, 3), token=acme_token), 3)
    assert ConversionEvent.objects.count() == 3
    assert not Customer.objects.filter(email="p3@example.com").exists()
    # The limit is per token: another token of the same workspace, from the same address, goes through.
    other = ApiTokenFactory(workspace=acme_token.workspace)
    assert api.post(URL, sale(click, 4), token=other).status_code == 201


@override_settings(RATELIMIT_CONVERSIONS_TOKEN="3/m", RATELIMIT_CONVERSIONS_IP="100/m")
def test_every_request_counts_whatever_its_outcome(api, acme_token, click):
    assert api.post(URL, {"event": "nope"}, token=acme_token).status_code == 422
    assert api.post(URL, {"event": "lead", "click_id": "unknown"}, token=acme_token).status_code == 422
    assert api.post(URL, sale(click), token=acme_token).status_code == 201
    # Over the limit even a valid request is refused before anything runs.
    assert_rate_limited(api.post(URL, sale(click, 1), token=acme_token), 3)
    assert ConversionEvent.objects.count() == 1


@override_settings(RATELIMIT_CONVERSIONS_TOKEN="3/m", RATELIMIT_CONVERSIONS_IP="100/m")
def test_errors_carry_the_rate_limit_headers_too(api, acme_token):
    resp = api.post(URL, {"event": "nope"}, token=acme_token)
    assert_api_error(resp, 422, "invalid event")
    assert (resp["X-RateLimit-Limit"], resp["X-RateLimit-Remaining"]) == ("3", "2")


@override_settings(RATELIMIT_CONVERSIONS_TOKEN="100/m", RATELIMIT_CONVERSIONS_IP="3/m")
def test_ip_limit_counts_every_token_from_one_address(api, acme, globex, click):
    tokens = [ApiTokenFactory(workspace=acme) for _ in range(3)]
    for n, token in enumerate(tokens):
        assert api.post(URL, sale(click, n), token=token, REMOTE_ADDR="203.0.113.7").status_code == 201
    fresh = ApiTokenFactory(workspace=globex)
    assert_rate_limited(api.post(URL, {"event": "lead"}, token=fresh, REMOTE_ADDR="203.0.113.7"), 3)
    assert ConversionEvent.objects.count() == 3
    # Another address has its own budget.
    assert api.post(URL, sale(click, 9), token=tokens[0], REMOTE_ADDR="203.0.113.8").status_code == 201


@override_settings(RATELIMIT_CONVERSIONS_TOKEN="100/m", RATELIMIT_CONVERSIONS_IP="3/m")
def test_requests_refused_at_authentication_count_against_the_ip_limit(api, acme_token, click):
    address = {"REMOTE_ADDR": "203.0.113.9"}
    assert_api_error(api.post(URL, sale(click), token="lf_" + "x" * 43, **address), 401, "unauthorized")
    assert_api_error(api.post(URL, sale(click), **address), 401, "unauthorized")  # no token at all
    assert api.post(URL, sale(click), token=acme_token, **address).status_code == 201
    # The address's budget is spent, whatever the credentials.
    assert_rate_limited(api.post(URL, sale(click, 1), token="lf_" + "y" * 43, **address), 3)
    assert_rate_limited(api.post(URL, sale(click, 2), token=acme_token, **address), 3)
    assert ConversionEvent.objects.count() == 1


@override_settings(RATELIMIT_CONVERSIONS_TOKEN="100/m", RATELIMIT_CONVERSIONS_IP="2/m", TRUSTED_PROXY_COUNT=1)
def test_ip_limit_counts_an_ipv6_client_by_its_64(api, acme_token, click):
    for n in range(2):  # every request from a new address of the client's /64, through the proxy
        address = {"REMOTE_ADDR": "10.0.0.2", "HTTP_X_FORWARDED_FOR": f"2001:db8:aa:bb::{n + 1}"}
        assert api.post(URL, sale(click, n), token=acme_token, **address).status_code == 201
    address = {"REMOTE_ADDR": "10.0.0.2", "HTTP_X_FORWARDED_FOR": "2001:db8:aa:bb:1234:5678:9abc:def0"}
    assert_rate_limited(api.post(URL, sale(click, 2), token=acme_token, **address), 2)
    other = {"REMOTE_ADDR": "10.0.0.2", "HTTP_X_FORWARDED_FOR": "2001:db8:aa:bc::1"}
    assert api.post(URL, sale(click, 3), token=acme_token, **other).status_code == 201


@override_settings(RATELIMIT_CONVERSIONS_TOKEN="100/m", RATELIMIT_CONVERSIONS_IP="2/m", TRUSTED_PROXY_COUNT=1)
def test_ip_limit_behind_a_proxy_cannot_be_dodged_with_a_forged_header(api, acme_token, click):
    # The proxy (REMOTE_ADDR 10.0.0.2) appends the address it saw; anything left of it is the client's word.
    for n, forged in enumerate(["1.1.1.1", "2.2.2.2"]):
        resp = api.post(
            URL,
            sale(click, n),
            token=acme_token,
            REMOTE_ADDR="10.0.0.2",
            HTTP_X_FORWARDED_FOR=f"{forged}, 198.51.100.4",
        )
        assert resp.status_code == 201
    resp = api.post(
        URL, sale(click, 2), token=acme_token, REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="3.3.3.3, 198.51.100.4"
    )
    assert_rate_limited(resp, 2)
    # A different real client behind the same proxy is not affected.
    resp = api.post(URL, sale(click, 3), token=acme_token, REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="198.51.100.5")
    assert resp.status_code == 201


def test_default_limits_are_the_documented_ones(settings):
    assert (settings.RATELIMIT_CONVERSIONS_TOKEN, settings.RATELIMIT_CONVERSIONS_IP) == ("1000/m", "600/m")


@override_settings(
    CACHES={
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:1/0",  # nothing listens there: Redis is down
            "OPTIONS": {"socket_connect_timeout": 0.25, "socket_timeout": 0.25},
        }
    },
    RATELIMIT_CONVERSIONS_TOKEN="1/m",
    RATELIMIT_CONVERSIONS_IP="1/m",
)
def test_redis_outage_fails_open(api, acme_token, click, caplog):
    with caplog.at_level(logging.WARNING, logger="lftrack.ratelimit"):
        for n in range(3):  # over both limits, had they been counted
            resp = api.post(URL, sale(click, n), token=acme_token)
            assert resp.status_code == 201
            assert "X-RateLimit-Limit" not in resp
    assert ConversionEvent.objects.count() == 3
    assert "rate limits not enforced: cache unavailable (ConnectionError)" in caplog.text
    assert acme_token.secret not in caplog.text
