"""A worker killed in the middle of a delivery: the event is delivered again later, with the same webhook-id."""

import asyncio
import os
import signal
import subprocess
import sys
import time

import pytest
from procrastinate.contrib.django import app

from customers.services import customer_match
from tests.conftest import database_url
from tests.webhooks.conftest import work
from webhooks.models import Delivery
from webhooks.services import endpoint_create
from webhooks.tasks import stalled_jobs_retry

pytestmark = [pytest.mark.fault, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("local_hooks")]


def test_a_delivery_cut_by_a_killed_worker_is_delivered_again(acme, receiver, settings):
    issued = endpoint_create(workspace=acme, url=receiver.url, event_types=["customer.created"])
    receiver.secret = issued.secret
    receiver.hold = 30  # the worker is in the middle of this delivery when it dies
    customer_match(workspace=acme, channel="api", email="ada@example.com")
    env = {**os.environ, "DATABASE_URL": database_url(), "WEBHOOKS_ALLOW_PRIVATE_NETWORKS": "1", "LOG_LEVEL": "WARNING"}
    worker = subprocess.Popen(
        [sys.executable, "manage.py", "procrastinate", "worker", "--queues", "webhooks", "--concurrency", "1"],
        cwd=settings.BASE_DIR,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while not receiver.received:
            assert time.monotonic() < deadline and worker.poll() is None, "the worker never delivered"
            time.sleep(0.1)
    finally:
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=10)
    first_id = receiver.received[0][0]
    assert Delivery.objects.get().state == "pending"

    # Its heartbeat has stopped: the periodic job puts its job back in the queue.
    time.sleep(1.5)
    receiver.hold = 0
    with app.replace_connector(app.connector.get_worker_connector()) as worker_app:

        async def retry() -> int:
            async with worker_app.open_async():
                return await stalled_jobs_retry(worker_app.job_manager, seconds=1)

        assert asyncio.run(retry()) == 1
    work()
    assert [wid for wid, _, _, _ in receiver.received] == [first_id, first_id]  # at least once, de-duplicable
    assert receiver.received[1][1]["type"] == "customer.created"
    assert Delivery.objects.get().state == "delivered"
