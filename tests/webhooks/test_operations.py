"""What an operator sees: a receiver down for a while, a worker gone, a job that keeps crashing."""

import logging

import pytest
from django.test import Client
from procrastinate.contrib.django.models import ProcrastinateJob
from procrastinate.jobs import Job

from customers.services import customer_match
from tests.factories import ClickFactory
from tests.webhooks.conftest import work
from webhooks.models import Attempt, Delivery, Event
from webhooks.services import endpoint_create
from webhooks.tasks import DeliveryRetry, RetryAt


def hook(workspace, receiver, types):
    issued = endpoint_create(workspace=workspace, url=receiver.url, event_types=types)
    receiver.secret = issued.secret
    return issued.endpoint


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("local_hooks")
def test_a_receiver_down_for_a_while_loses_nothing_and_each_delivery_keeps_one_job(acme, receiver, settings):
    settings.WEBHOOK_FAILURES_TO_DISABLE = 1000
    hook(acme, receiver, ["customer.created"])
    receiver.script = [503] * 25
    for n in range(5):
        customer_match(workspace=acme, channel="api", email=f"p{n}@example.com")
    work(until=lambda: Attempt.objects.filter(ok=False).count() >= 15)
    # Down: every delivery retried in its own job, which waits for its time; none added per retry.
    assert ProcrastinateJob.objects.filter(task_name="webhooks.deliver").count() == 5
    work()
    assert set(Delivery.objects.values_list("state", flat=True)) == {"delivered"}
    delivered = [wid for wid, payload, _, _ in receiver.received if payload][-5:]
    assert len(set(delivered)) == 5 and set(delivered) == {e.public_id for e in Event.objects.all()}
    assert ProcrastinateJob.objects.filter(task_name="webhooks.deliver").count() == 5


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("local_hooks")
def test_with_no_worker_the_api_answers_and_events_wait_in_the_outbox(acme, receiver, acme_token):
    hook(acme, receiver, ["lead.created"])
    for n in range(3):
        click = ClickFactory(workspace=acme, link__workspace=acme)
        response = Client().post(
            "/api/v1/conversions",
            {"event": "lead", "click_id": click.click_id, "customer": {"email": f"p{n}@example.com"}},
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {acme_token.secret}",
        )
        assert response.status_code == 201
    assert Event.objects.filter(dispatched_at__isnull=True).count() == 3 and receiver.received == []
    assert ProcrastinateJob.objects.filter(task_name="webhooks.dispatch", status="todo").count() == 3
    work()  # the worker is back
    assert sorted(p["type"] for _, p, _, _ in receiver.received) == ["lead.created"] * 3


def test_a_crashing_job_logs_one_line_a_failure_and_gives_up_after_the_retry_window(caplog, settings):
    settings.WEBHOOK_RETRY_WINDOW_HOURS = 1
    job = Job(id=7, queue="webhooks", lock=None, queueing_lock=None, task_name="webhooks.dispatch", attempts=3)
    with caplog.at_level(logging.WARNING, logger="lftrack.webhooks"):
        decision = DeliveryRetry().get_retry_decision(exception=KeyError("boom"), job=job)
    assert decision.retry_at is not None
    (line,) = caplog.records
    assert line.getMessage() == "webhook job failed" and (line.task, line.attempt, line.error) == (
        "webhooks.dispatch",
        4,
        "KeyError",
    )
    assert (
        DeliveryRetry().get_retry_decision(exception=KeyError("boom"), job=Job(**{**job.__dict__, "attempts": 60}))
        is None
    )
    # a delivery's own retries are the delivery's business, and log their own line (webhooks/delivery.py)
    assert (
        DeliveryRetry().get_retry_decision(exception=RetryAt(decision.retry_at), job=job).retry_at == decision.retry_at
    )
