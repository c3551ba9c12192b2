"""Per-address limits on the endpoints that answer without a secret, or that a leaked token could flood."""

import pytest
from django.core.cache import cache

from campaigns.models import Suppression
from tests.conftest import assert_api_error
from tests.factories import CampaignFactory

pytestmark = pytest.mark.django_db
ADDRESS = {"REMOTE_ADDR": "203.0.113.77"}


@pytest.fixture(autouse=True)
def _counters():
    cache.clear()


def test_bad_tokens_on_campaign_leads_are_limited_per_address(api, acme_token, settings):
    settings.RATELIMIT_CAMPAIGN_LEADS_IP = "3/m"
    CampaignFactory(workspace=acme_token.workspace, slug="spring")
    url = "/api/v1/campaigns/spring/leads"
    for _ in range(3):
        assert_api_error(
            api.post(url, {"email": "a@example.com"}, token="lf_" + "x" * 43, **ADDRESS), 401, "unauthorized"
        )
    assert_api_error(api.post(url, {"email": "a@example.com"}, token="lf_" + "x" * 43, **ADDRESS), 429, "rate_limited")
    assert_api_error(api.post(url, {"email": "a@example.com"}, token=acme_token, **ADDRESS), 429, "rate_limited")
    assert api.post(url, {"email": "a@example.com"}, token=acme_token, REMOTE_ADDR="203.0.113.78").status_code == 201


def test_email_events_are_limited_per_token_and_per_address(api, acme_token, settings):
    settings.RATELIMIT_EMAIL_EVENTS_TOKEN = "2/m"
    url = "/api/v1/email-events"
    for n in range(2):
        assert (
            api.post(url, {"type": "bounce", "email": f"b{n}@example.com"}, token=acme_token, **ADDRESS).status_code
            == 200
        )
    resp = api.post(url, {"type": "bounce", "email": "b9@example.com"}, token=acme_token, REMOTE_ADDR="198.51.100.30")
    assert_api_error(resp, 429, "rate_limited")  # the token's budget, from any address
    assert resp["Retry-After"]
    assert Suppression.objects.count() == 2

    settings.RATELIMIT_EMAIL_EVENTS_TOKEN, settings.RATELIMIT_EMAIL_EVENTS_IP = "100/m", "2/m"
    cache.clear()
    for _ in range(2):
        assert_api_error(api.post(url, {"type": "bounce", "email": "c@example.com"}, **ADDRESS), 401, "unauthorized")
    assert_api_error(api.post(url, {"type": "bounce", "email": "c@example.com"}, **ADDRESS), 429, "rate_limited")


def test_unsubscribe_pages_are_limited_per_address(client, settings):
    settings.RATELIMIT_UNSUBSCRIBE_IP = "3/m"
    for _ in range(3):
        assert client.get("/u/garbage", **ADDRESS).status_code == 400
    limited = client.get("/u/garbage", **ADDRESS)
    assert limited.status_code == 429 and limited["Retry-After"]
    assert client.get("/u/garbage", REMOTE_ADDR="203.0.113.79").status_code == 400
