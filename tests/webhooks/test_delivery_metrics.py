"""Webhook attempts, disablings and the queue on /metrics (webhooks/delivery.py, rollups/metrics.py)."""

import pytest
from django.test import Client

from customers.services import customer_match
from tests.scrape import TOKEN, moved, scrape
from tests.webhooks.conftest import work
from webhooks.services import endpoint_create, endpoint_enable

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("local_hooks")]


@pytest.fixture(autouse=True)
def _token(settings):
    settings.METRICS_TOKEN = TOKEN


def hook(workspace, receiver):
    issued = endpoint_create(workspace=workspace, url=receiver.url, event_types=["customer.created"])
    receiver.secret = issued.secret
    return issued.endpoint


def gauge(scraped: dict, name: str, **labels: str) -> float:
    return scraped[(name, frozenset(labels.items()))]


def test_attempts_count_delivered_retry_and_failed(acme, receiver):
    client = Client()
    hook(acme, receiver)
    receiver.script = [503, 200, 404]  # the first event's first try fails and is retried; the second fails for good
    before = scrape(client)
    customer_match(workspace=acme, channel="api", email="ada@example.com")
    work()
    customer_match(workspace=acme, channel="api", email="bea@example.com")
    work()
    after = scrape(client)
    attempts = {
        outcome: moved(before, after, "lftrack_webhook_attempts_total", outcome=outcome)
        for outcome in ("delivered", "retry", "failed")
    }
    assert attempts == {"delivered": 1, "retry": 1, "failed": 1}


def test_a_disabled_endpoint_is_counted_and_its_waiting_deliveries_leave_the_queue_until_it_is_back(
    acme, receiver, settings
):
    client = Client()
    settings.WEBHOOK_FAILURES_TO_DISABLE = 2
    endpoint = hook(acme, receiver)
    receiver.script = [503] * 100
    before = scrape(client)
    for name in ("ada", "bea", "cy"):
        customer_match(workspace=acme, channel="api", email=f"{name}@example.com")
    assert gauge(before, "lftrack_webhook_queue_depth", stage="undispatched") == 0
    assert gauge(scrape(client), "lftrack_webhook_queue_depth", stage="undispatched") == 3
    work()
    after = scrape(client)
    assert moved(before, after, "lftrack_webhook_disablings_total") == 1
    assert gauge(after, "lftrack_webhook_endpoints_disabled") == 1
    assert gauge(after, "lftrack_webhook_queue_depth", stage="pending") == 0  # waiting for the endpoint, not for us
    endpoint_enable(endpoint=endpoint)
    enabled = scrape(client)
    assert gauge(enabled, "lftrack_webhook_endpoints_disabled") == 0
    assert gauge(enabled, "lftrack_webhook_queue_depth", stage="pending") == 3
