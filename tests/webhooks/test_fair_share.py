"""Noisy neighbours on the webhooks' queue: a workspace whose endpoints all time out, whose backlog is thousands of
events or whose event cannot be built leaves another workspace's delivery on time (docs/concurrency.md,
"Fair shares"). Real receivers on loopback, the engine's worker in-process."""

import asyncio
import contextlib
import json
import logging
import time
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone
from procrastinate.contrib.django import app

from customers.services import customer_match
from lftrack.logs import JsonFormatter
from tests.factories import CustomerFactory
from tests.webhooks.conftest import Receiver, work
from tests.webhooks.test_abuse import RawReceiver
from webhooks import delivery as delivery_module
from webhooks import network, tasks
from webhooks.models import Delivery, Endpoint, Event
from webhooks.outbox import event_queue, events_dispatch, events_dispatch_pending
from webhooks.services import endpoint_create

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("local_hooks")]


def never_answers():
    """Hold the connection past the delivery's deadline, and say nothing."""
    time.sleep(3)
    return iter(())


def hook(workspace, receiver, path="/hook"):
    issued = endpoint_create(
        workspace=workspace, url=receiver.url.replace("/hook", path), event_types=["customer.created"]
    )
    receiver.secret = issued.secret  # what a Receiver verifies signatures with
    return issued.endpoint


def log_lines(caplog, message: str) -> list[dict]:
    formatter = JsonFormatter()
    return [json.loads(formatter.format(record)) for record in caplog.records if record.getMessage() == message]


def work_live(until, *, timeout: float = 30.0) -> None:
    """Run the engine's worker (4 slots, polling every 50 ms) in this process until `until()` holds, then stop
    it as SIGTERM would: running jobs finish. Unlike `work`, it fetches new jobs while others still run."""

    def holds() -> bool:
        try:
            return until()
        finally:
            connection.close()  # this helper thread's own connection

    async def run() -> None:
        worker = asyncio.create_task(
            worker_app.run_worker_async(
                queues=["webhooks"],
                wait=True,
                concurrency=4,
                fetch_job_polling_interval=0.05,
                listen_notify=False,
                install_signal_handlers=False,
            )
        )
        deadline = time.monotonic() + timeout
        try:
            while not await asyncio.to_thread(holds):
                assert time.monotonic() < deadline, "not done in time"
                await asyncio.sleep(0.05)
        finally:
            worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await worker

    with app.replace_connector(app.connector.get_worker_connector()) as worker_app:

        async def main() -> None:
            async with worker_app.open_async():
                await run()

        asyncio.run(main())


def stale_events(workspace, count: int, *, type="customer.created") -> list[Event]:
    """Events a dead process left undispatched, older than the sweeper's grace (each of a contact of its own)."""
    long_ago = timezone.now() - timedelta(minutes=30)
    customers = [CustomerFactory(workspace=workspace) for _ in range(min(count, 3))]
    return Event.objects.bulk_create(
        Event(
            workspace=workspace,
            type=type,
            subject_id=customers[n % len(customers)].pk,
            customer_id=customers[n % len(customers)].pk,
            created_at=long_ago + timedelta(milliseconds=n),
        )
        for n in range(count)
    )


def test_a_workspace_whose_endpoints_all_time_out_leaves_another_its_delivery_on_time(
    acme,
    globex,
    monkeypatch,
    settings,
):
    """Acme's four endpoints hang past the deadline; their batches are queued first. The worker (4 slots) runs
    at most two of them at once, so globex's event goes while acme's endpoints are still timing out."""
    monkeypatch.setattr(network, "TIMEOUT_SECONDS", 0.5)
    settings.WEBHOOK_FAILURES_TO_DISABLE = 40  # each of acme's batches holds its slot 10 rounds of 0.5 s
    hanging, healthy = RawReceiver(never_answers), Receiver()
    try:
        flooded = [hook(acme, hanging, path=f"/a{n}") for n in range(4)]
        for n in range(40):
            customer_match(workspace=acme, channel="api", email=f"a{n}@example.com")
        assert events_dispatch(workspace_id=acme.pk) == 40  # four batch jobs of 40, ahead in the queue
        hook(globex, healthy)
        customer_match(workspace=globex, channel="api", email="b@example.com")

        work_live(until=lambda: Delivery.objects.filter(workspace=globex, state="delivered").exists())
        delivered = Delivery.objects.get(workspace=globex).delivered_at
        # Before any of acme's batches gave its worker slot back (each ends with its endpoint disabled).
        assert not Endpoint.objects.filter(pk__in=[e.pk for e in flooded], disabled_at__lte=delivered).exists()
        assert [payload["data"]["email"] for _, payload, _, _ in healthy.received] == ["b@example.com"]
    finally:
        hanging.close()
        healthy.close()


def test_a_workspace_sends_on_two_worker_slots_at_most(acme, receiver):
    receiver.hold = 0.3
    for n in range(4):
        hook(acme, receiver, path=f"/a{n}")
    for n in range(16):
        customer_match(workspace=acme, channel="api", email=f"a{n}@example.com")
    work()  # four batch jobs of 16, four worker slots
    assert len(receiver.received) == 64
    assert receiver.most_at_once <= delivery_module.WORKSPACE_SLOTS * delivery_module.BATCH_LANES  # 8, not 16


def test_a_slow_receivers_batch_gives_its_worker_slot_back_after_its_budget(acme, receiver, monkeypatch):
    monkeypatch.setattr(delivery_module, "BATCH_BUDGET_SECONDS", 0.3)
    hook(acme, receiver)
    receiver.hold = 0.2
    for n in range(24):
        customer_match(workspace=acme, channel="api", email=f"p{n}@example.com")
    work()
    assert sorted(p["data"]["email"] for _, p, _, _ in receiver.received) == sorted(
        f"p{n}@example.com" for n in range(24)
    )
    with connection.cursor() as cursor:  # the batch stopped early; the rest went in jobs of their own
        cursor.execute("SELECT count(*) FROM procrastinate_jobs WHERE task_name = 'webhooks.deliver'")
        assert 0 < cursor.fetchone()[0] < 24


def test_a_workspaces_backlog_gives_its_worker_slot_back_after_the_dispatch_budget(acme, globex, receiver, monkeypatch):
    """One worker slot: acme's dispatch job of 1,500 events gives it back after its budget, globex's job goes next."""
    monkeypatch.setattr(tasks, "DISPATCH_BUDGET_SECONDS", 0.0)
    backlog = Event.objects.bulk_create(
        Event(workspace=acme, type="customer.created", subject_id=n, created_at=timezone.now()) for n in range(1500)
    )
    event_queue(event_id=backlog[0].pk, workspace_id=acme.pk, customer_id=None)
    hook(globex, receiver)
    customer_match(workspace=globex, channel="api", email="b@example.com")  # its event's dispatch job: next in line

    with app.replace_connector(app.connector.get_worker_connector()) as worker_app:
        worker_app.run_worker(
            queues=["webhooks"], wait=False, install_signal_handlers=False, listen_notify=False, concurrency=1
        )
    mine = Event.objects.get(workspace=globex).dispatched_at
    assert Event.objects.filter(workspace=acme, dispatched_at__gt=mine).count() >= 500  # acme's rest after it
    assert not Event.objects.filter(dispatched_at__isnull=True).exists()
    assert [p["data"]["email"] for _, p, _, _ in receiver.received] == ["b@example.com"]


def test_the_sweeper_takes_each_workspace_in_turn(acme, globex, receiver):
    hook(acme, receiver)
    hook(globex, receiver)
    stale_events(acme, 1200)
    [mine] = stale_events(globex, 1)

    assert events_dispatch_pending() == 1201
    theirs = Delivery.objects.filter(workspace=acme).order_by("pk").values_list("pk", flat=True)
    assert Delivery.objects.get(event=mine).pk < theirs[500]  # after one batch of acme's, not all of them


def test_an_event_that_cannot_be_built_is_logged_once_a_pass_and_skipped(acme, globex, receiver, caplog):
    hook(acme, receiver)
    hook(globex, receiver)
    [poisoned] = stale_events(acme, 1, type="lead.updated")  # a type this version no longer knows
    stale_events(acme, 2)
    [mine] = stale_events(globex, 1)

    with caplog.at_level(logging.WARNING, logger="lftrack.webhooks"):
        assert events_dispatch_pending() == 3  # a sweep that raised for all would have dispatched none
        [line] = log_lines(caplog, "webhook event not dispatched")
        assert {key: line[key] for key in ("event_id", "workspace_id", "event_type", "error")} == {
            "event_id": poisoned.pk,
            "workspace_id": acme.pk,
            "event_type": "lead.updated",
            "error": "KeyError",
        }
        assert Delivery.objects.filter(event=mine).exists()
        assert events_dispatch_pending() == 0  # the next pass: logged once more, skipped again
    assert len(log_lines(caplog, "webhook event not dispatched")) == 2
    assert Event.objects.filter(dispatched_at__isnull=True).get() == poisoned


def test_a_workspaces_dispatch_reads_its_own_events_only(acme, globex):
    stale_events(acme, 3000)
    stale_events(globex, 1)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE webhooks_event")
        cursor.execute(
            "EXPLAIN SELECT id FROM webhooks_event WHERE dispatched_at IS NULL AND workspace_id = %s"
            " ORDER BY id LIMIT 500 FOR UPDATE SKIP LOCKED",
            [globex.pk],
        )
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "webhooks_event_undispatched" in plan and "Index Cond: (workspace_id = " in plan, plan
