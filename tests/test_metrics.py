"""GET /metrics (lftrack/metrics.py, lftrack/views.py): behind its token, and each family moving with its event."""

import json
import logging
import math
import re
import runpy
from datetime import timedelta

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import OperationalError, connections
from django.utils import timezone
from redis.exceptions import ConnectionError as RedisConnectionError

import conversions.api
import lftrack.settings
import rollups.metrics
from clicks import views as click_views
from clicks.links import link_delete
from conversions.models import ConversionEvent
from lftrack import ratelimit
from lftrack.deadline import _cut
from rollups.services import numbers_roll_up
from tests.conftest import assert_api_error
from tests.factories import (
    CampaignEmailFactory,
    CampaignFactory,
    ClickFactory,
    EnrollmentFactory,
    LinkFactory,
)
from tests.scrape import TOKEN, moved, samples, scrape

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _token(settings):
    settings.METRICS_TOKEN = TOKEN


@pytest.fixture
def client(either_client):
    """Each test twice: through Django's test client and through lftrack.wsgi.application (tests/conftest.py)."""
    return either_client


def test_without_a_token_configured_the_endpoint_is_not_found(client, settings):
    settings.METRICS_TOKEN = ""
    assert_api_error(client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}"), 404, "not found")


@pytest.mark.parametrize("header", [None, "", f"Bearer {TOKEN}x", f"Bearer {TOKEN[:-1]}", TOKEN, f"Basic {TOKEN}"])
def test_a_missing_or_wrong_token_is_refused(client, header):
    extra = {} if header is None else {"HTTP_AUTHORIZATION": header}
    response = client.get("/metrics", **extra)
    assert_api_error(response, 401, "invalid token")
    assert response["WWW-Authenticate"] == "Bearer"
    assert b"lftrack_" not in response.content


def test_the_token_opens_the_text_format(client):
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=0.0.4")
    assert "# TYPE lftrack_request_duration_seconds histogram" in response.content.decode()


def test_it_is_answered_for_any_host_over_plain_http(client, settings):
    """Prometheus scrapes a node by its address, like the probes: no host check, no https redirect."""
    settings.SECURE_SSL_REDIRECT = True
    response = client.get("/metrics", HTTP_HOST="10.0.0.5:8000", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 200


def test_guessing_the_token_is_limited_per_address_and_the_token_still_works_elsewhere(client, settings):
    settings.RATELIMIT_METRICS_FAILURES_IP = "3/m"
    answers = [
        client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer guess{n}", REMOTE_ADDR="198.51.100.7") for n in range(5)
    ]
    assert [a.status_code for a in answers] == [401, 401, 401, 429, 429]
    assert_api_error(answers[-1], 429, "rate_limited")
    right = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}", REMOTE_ADDR="198.51.100.7")
    assert right.status_code == 429  # the address is stopped, whatever it sends now
    assert client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}", REMOTE_ADDR="198.51.100.8").status_code == 200
    after = scrape(client)
    assert after[("lftrack_rate_limited_total", frozenset({("limit", "metrics-failures-ip")}))] >= 2


def test_requests_count_by_route_name_and_status_with_their_time(client):
    link = LinkFactory()
    before = scrape(client)
    client.get(f"/l/{link.key}")
    client.get("/l/nosuchlink")
    client.get("/healthz")
    client.get("/no/such/page")
    after = scrape(client)
    assert moved(before, after, "lftrack_request_duration_seconds_count", route="follow-link", status="302") == 1
    assert moved(before, after, "lftrack_request_duration_seconds_count", route="follow-link", status="404") == 1
    assert moved(before, after, "lftrack_request_duration_seconds_count", route="healthz", status="200") == 1
    assert moved(before, after, "lftrack_request_duration_seconds_count", route="unmatched", status="404") == 1
    assert (
        moved(before, after, "lftrack_request_duration_seconds_bucket", route="healthz", status="200", le="+Inf") == 1
    )
    assert moved(before, after, "lftrack_request_duration_seconds_sum", route="healthz", status="200") > 0


def test_an_api_request_counts_under_its_url_pattern_name(client, api, acme_token):
    before = scrape(client)
    api.get("/api/v1/conversions", token=acme_token)
    after = scrape(client)
    assert moved(before, after, "lftrack_request_duration_seconds_count", route="conversion-list", status="200") == 1


def test_a_click_counts_recorded_and_the_batch_it_was_written_in(client):
    link = LinkFactory()
    before = scrape(client)
    assert "lf_cid=" in client.get(f"/l/{link.key}")["Location"]
    after = scrape(client)
    assert moved(before, after, "lftrack_clicks_total", outcome="recorded") == 1
    assert moved(before, after, "lftrack_batch_size_count") == 1
    assert moved(before, after, "lftrack_batch_size_bucket", le="1.0") == 1


def test_a_click_past_the_limit_counts_limited_and_a_refusal_of_its_limit(client, settings):
    settings.RATELIMIT_REDIRECT_IP = "1/m"
    link = LinkFactory()
    before = scrape(client)
    client.get(f"/l/{link.key}", REMOTE_ADDR="198.51.100.30")
    assert "lf_cid=" not in client.get(f"/l/{link.key}", REMOTE_ADDR="198.51.100.30")["Location"]
    after = scrape(client)
    assert moved(before, after, "lftrack_clicks_total", outcome="recorded") == 1
    assert moved(before, after, "lftrack_clicks_total", outcome="limited") == 1
    assert moved(before, after, "lftrack_rate_limited_total", limit="redirect-ip") == 1


def test_a_deleted_links_redirect_to_its_fallback_counts_gone(client):
    link = LinkFactory()
    link.workspace.link_fallback_url = "https://e.com/sorry"
    link.workspace.save()
    link_delete(link=link)
    before = scrape(client)
    assert client.get(f"/l/{link.key}")["Location"] == "https://e.com/sorry"
    after = scrape(client)
    assert moved(before, after, "lftrack_clicks_total", outcome="gone") == 1
    assert moved(before, after, "lftrack_clicks_total", outcome="limited") == 0
    assert moved(before, after, "lftrack_clicks_total", outcome="recorded") == 0


def test_a_redirect_during_an_outage_counts_outage_and_a_database_error(client, monkeypatch):
    link = LinkFactory()
    client.get(f"/l/{link.key}")  # remembered by this process

    def unavailable(*args, **kwargs):
        raise OperationalError("the server closed the connection")

    monkeypatch.setattr(click_views, "click_follow", unavailable)
    before = scrape(client)
    response = client.get(f"/l/{link.key}")
    assert response.status_code == 302 and "lf_cid=" not in response["Location"]
    after = scrape(client)
    assert moved(before, after, "lftrack_clicks_total", outcome="outage") == 1
    assert moved(before, after, "lftrack_backend_errors_total", backend="database") == 1


def test_an_api_request_answered_503_counts_a_database_error(client, api, acme_token, monkeypatch):
    def unavailable(**kwargs):
        raise OperationalError("canceling statement due to statement timeout")

    monkeypatch.setattr(conversions.api, "conversion_record", unavailable)
    click = ClickFactory()
    before = scrape(client)
    body = {"event": "lead", "click_id": click.click_id, "customer": {"email": "ada@example.com"}}
    assert api.post("/api/v1/conversions", body, token=acme_token).status_code == 503
    after = scrape(client)
    assert moved(before, after, "lftrack_backend_errors_total", backend="database") == 1


def test_conversions_count_by_event_and_outcome(client, api, acme, acme_token):
    click = ClickFactory(link__post__workspace=acme, workspace=acme)
    lead = {"event": "lead", "click_id": click.click_id, "customer": {"email": "ada@example.com"}}
    sale = {"event": "sale", "click_id": click.click_id, "value_cents": 4900, "currency": "EUR", "invoice_id": "in_1"}
    before = scrape(client)
    assert api.post("/api/v1/conversions", lead, token=acme_token).status_code == 201
    assert api.post("/api/v1/conversions", sale, token=acme_token).status_code == 201
    assert api.post("/api/v1/conversions", sale, token=acme_token).status_code == 200  # the invoice's repeat
    unknown = {**lead, "click_id": "nosuchclick"}
    assert_api_error(api.post("/api/v1/conversions", unknown, token=acme_token), 422, "unknown click_id")
    after = scrape(client)
    counts = {
        (event, outcome): moved(before, after, "lftrack_conversions_total", channel="api", event=event, outcome=outcome)
        for event in ("lead", "sale")
        for outcome in ("recorded", "replayed", "refused")
    }
    assert counts == {
        ("lead", "recorded"): 1,
        ("lead", "replayed"): 0,
        ("lead", "refused"): 1,
        ("sale", "recorded"): 1,
        ("sale", "replayed"): 1,
        ("sale", "refused"): 0,
    }
    assert ConversionEvent.objects.count() == 2


def test_a_refused_conversion_counts_its_rate_limit(client, api, acme, acme_token, settings):
    settings.RATELIMIT_CONVERSIONS_TOKEN = "1/m"
    click = ClickFactory(link__post__workspace=acme, workspace=acme)
    lead = {"event": "lead", "click_id": click.click_id, "customer": {"email": "ada@example.com"}}
    before = scrape(client)
    api.post("/api/v1/conversions", lead, token=acme_token)
    assert_api_error(api.post("/api/v1/conversions", lead, token=acme_token), 429, "rate_limited")
    after = scrape(client)
    assert moved(before, after, "lftrack_rate_limited_total", limit="conversions-token") == 1
    assert moved(before, after, "lftrack_conversions_total", channel="api", event="lead", outcome="recorded") == 1


def test_a_failing_redis_counts_a_redis_error_and_the_request_goes_through(client, api, acme, acme_token, monkeypatch):
    def down(*args, **kwargs):
        raise RedisConnectionError("Connection refused")

    monkeypatch.setattr(ratelimit, "_count", down)
    click = ClickFactory(link__post__workspace=acme, workspace=acme)
    before = scrape(client)
    lead = {"event": "lead", "click_id": click.click_id, "customer": {"email": "ada@example.com"}}
    assert api.post("/api/v1/conversions", lead, token=acme_token).status_code == 201
    after = scrape(client)
    assert moved(before, after, "lftrack_backend_errors_total", backend="redis") == 1


@pytest.mark.django_db(transaction=True)
def test_a_connection_cut_at_its_deadline_counts_a_deadline_cut(client):
    other = connections.create_connection("default")
    try:
        other.ensure_connection()
        before = scrape(client)
        _cut(other)
        after = scrape(client)
    finally:
        other.close()
    assert moved(before, after, "lftrack_deadline_cuts_total") == 1


def test_a_job_that_raises_counts_by_task_and_outcome(client):
    """The worker's own line when a job ends (procrastinate.worker), as the engine writes it."""
    worker = logging.getLogger("procrastinate.worker")
    job = {"task_name": "webhooks.deliver", "id": 7, "attempts": 1}
    before = scrape(client)
    worker.info("Job ended with status: Error, to retry", extra={"action": "job_error_retry", "job": dict(job)})
    worker.error("Job ended with status: Error", extra={"action": "job_error", "job": dict(job)})
    worker.info("Job ended with status: Success", extra={"action": "job_success", "job": dict(job)})
    after = scrape(client)
    assert moved(before, after, "lftrack_job_failures_total", task="webhooks.deliver", outcome="retry") == 1
    assert moved(before, after, "lftrack_job_failures_total", task="webhooks.deliver", outcome="failed") == 1


def gauge(scraped: dict, name: str, **labels: str) -> float:
    return scraped[(name, frozenset(labels.items()))]


def test_the_roll_up_lag_is_infinite_before_the_first_roll_up_and_zero_once_caught_up(client):
    ClickFactory()
    assert gauge(scrape(client), "lftrack_rollup_lag_seconds", source="clicks_click") == math.inf
    numbers_roll_up()
    scraped = scrape(client)
    assert gauge(scraped, "lftrack_rollup_lag_seconds", source="clicks_click") == 0
    assert gauge(scraped, "lftrack_rollup_lag_seconds", source="conversions_conversionevent") == 0


def test_the_roll_up_lag_counts_from_the_last_catch_up_while_rows_wait(client, time_machine):
    time_machine.move_to(timezone.now(), tick=False)
    numbers_roll_up()
    time_machine.shift(timedelta(minutes=7))
    ClickFactory()
    assert gauge(scrape(client), "lftrack_rollup_lag_seconds", source="clicks_click") == pytest.approx(420, abs=1)


def test_the_sender_backlog_is_the_age_of_the_oldest_due_email_of_an_active_campaign(client, acme):
    assert gauge(scrape(client), "lftrack_sender_backlog_seconds") == 0
    campaign = CampaignFactory(workspace=acme)
    CampaignEmailFactory(campaign=campaign, position=1)
    now = timezone.now()
    EnrollmentFactory(campaign=campaign, workspace=acme, next_send_at=now - timedelta(minutes=12))
    EnrollmentFactory(campaign=campaign, workspace=acme, next_send_at=now - timedelta(minutes=3))
    EnrollmentFactory(campaign=campaign, workspace=acme, next_send_at=now + timedelta(hours=1))
    paused = CampaignFactory(workspace=acme, slug="paused", status="paused")
    EnrollmentFactory(campaign=paused, workspace=acme, next_send_at=now - timedelta(days=3))
    assert gauge(scrape(client), "lftrack_sender_backlog_seconds") == pytest.approx(720, abs=30)


def test_no_label_value_carries_a_path_an_address_or_anything_a_client_sent(client, api, acme, acme_token, settings):
    # The process's first user agent compiles crawlerdetect's pattern, which can pass the 2 s redirect deadline
    # on a loaded machine; the deadline is not what this test is about.
    settings.REDIRECT_DEADLINE = 0
    link = LinkFactory(post__workspace=acme)
    click = ClickFactory(link=link, workspace=acme)
    secret_things = [
        link.key,
        click.click_id,
        "ada@example.com",
        "Ada Lovelace",
        "203.0.113.99",
        "Sneaky/1.0",
        "ref.example",
    ]
    client.get(
        f"/l/{link.key}?email=ada@example.com", HTTP_USER_AGENT="Sneaky/1.0", HTTP_REFERER="https://ref.example/"
    )
    client.get(f"/l/{link.key}", REMOTE_ADDR="203.0.113.99")
    client.get("/l/ada@example.com")
    client.get("/admin/?q=ada@example.com")
    lead = {
        "event": "lead",
        "click_id": click.click_id,
        "customer": {"email": "ada@example.com", "name": "Ada Lovelace"},
    }
    api.post("/api/v1/conversions", lead, token=acme_token)
    api.post("/api/v1/conversions", {**lead, "event": "ada@example.com"}, token=acme_token)
    text = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").content.decode()
    values = {value for _, labels in samples(text) for _, value in labels}
    assert all(re.fullmatch(r"[a-z0-9_.:+-]+", value, re.I) for value in values), values
    assert [thing for thing in secret_things if thing in text] == []


def test_the_pixels_leads_count_under_their_channel(client, api, acme):
    acme.allowed_origins = "https://shop.acme.example"
    acme.save()
    click = ClickFactory(link__post__workspace=acme, workspace=acme)
    body = {"key": acme.tracking_key, "event": "lead", "click_id": click.click_id}
    unknown = {**body, "click_id": "nosuchclick"}

    def send(payload):
        raw = json.dumps(payload)
        return api.post(
            "/api/v1/browser/conversions",
            raw=raw,
            content_type="application/json",
            HTTP_ORIGIN="https://shop.acme.example",
        )

    before = scrape(client)
    assert send(body).status_code == 201
    assert_api_error(send(unknown), 422, "unknown click_id")
    after = scrape(client)
    assert moved(before, after, "lftrack_conversions_total", channel="pixel", event="lead", outcome="recorded") == 1
    assert moved(before, after, "lftrack_conversions_total", channel="pixel", event="lead", outcome="refused") == 1


@pytest.mark.parametrize("token", ["short", "x" * 31])
def test_a_short_metrics_token_stops_the_start(monkeypatch, token):
    monkeypatch.setenv("METRICS_TOKEN", token)
    with pytest.raises(ImproperlyConfigured, match="METRICS_TOKEN must be at least 32 characters"):
        runpy.run_path(lftrack.settings.__file__)


def test_during_an_outage_the_scrape_still_carries_the_counters(client, monkeypatch):
    def unreachable():
        raise OperationalError("connection refused")

    monkeypatch.setattr(rollups.metrics, "sql_cursor", unreachable)
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 200
    text = response.content.decode()
    assert "lftrack_request_duration_seconds" in text and "lftrack_sender_backlog_seconds" not in text
