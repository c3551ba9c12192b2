"""Sender workers killed with SIGKILL in the middle of a batch, against a real SMTP server: at most one
message per worker is left in doubt, the rest are recovered by the next pass, and nothing goes twice."""

import asyncio
import logging
import os
import signal
import subprocess
import sys
import time
from email import message_from_bytes

import pytest
from aiosmtpd.controller import Controller
from django.utils import timezone

from campaigns.models import EmailSend, Enrollment
from campaigns.sending import UNCONFIRMED, run_pass
from tests.conftest import database_url
from tests.factories import CampaignEmailFactory, CampaignFactory, CustomerFactory, EnrollmentFactory
from tests.faults.conftest import BASE_DIR, free_port

pytestmark = pytest.mark.fault

WORKERS = 2
ENROLLMENTS = 120  # bounded: about 2.5 s of mail per worker at the server's pace below


class SlowSink:
    """Accepts every message after a short think, and keeps the Message-ID of each."""

    def __init__(self):
        self.message_ids: list[str] = []

    async def handle_DATA(self, server, session, envelope):
        await asyncio.sleep(0.02)
        self.message_ids.append(message_from_bytes(envelope.content)["Message-ID"])
        return "250 Message accepted for delivery"


@pytest.fixture
def sink(caplog):
    caplog.set_level(logging.WARNING, logger="mail.log")
    handler = SlowSink()
    controller = Controller(handler, hostname="127.0.0.1", port=free_port())
    controller.start()
    yield handler, controller.port
    controller.stop()


def test_killed_workers_leave_at_most_one_message_each_in_doubt(transactional_db, acme, sink, settings):
    handler, port = sink
    campaign = CampaignFactory(workspace=acme, slug="spring")
    CampaignEmailFactory(campaign=campaign, position=1, delay_minutes=0)
    now = timezone.now()
    for i in range(ENROLLMENTS):
        EnrollmentFactory(
            campaign=campaign, customer=CustomerFactory(workspace=acme, email=f"p{i}@example.com"), next_send_at=now
        )
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "EMAIL_URL": f"smtp://127.0.0.1:{port}",
        "PUBLIC_BASE_URL": "https://track.example.com",
        "LOG_LEVEL": "WARNING",
    }
    workers = [
        subprocess.Popen(
            [sys.executable, "manage.py", "send_due_emails", "--batch-size", "50"],
            cwd=BASE_DIR,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(WORKERS)
    ]
    deadline = time.monotonic() + 30
    while len(handler.message_ids) < 20 and time.monotonic() < deadline:
        time.sleep(0.02)
    for worker in workers:
        worker.send_signal(signal.SIGKILL)
        worker.wait()
    assert 20 <= len(handler.message_ids) < ENROLLMENTS  # killed mid-batch

    in_doubt = EmailSend.objects.filter(status="failed", error=UNCONFIRMED).count()
    assert in_doubt <= WORKERS
    sent_before = EmailSend.objects.filter(status="sent").count()
    assert EmailSend.objects.filter(status="reserved").exists()  # what the dead workers never handed over

    # The next pass, in this process, releases the dead workers' reservations and sends the rest.
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_HOST_USER, settings.EMAIL_HOST_PASSWORD = (
        "127.0.0.1",
        port,
        "",
        "",
    )
    settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
    time.sleep(0.5)  # the killed workers' sessions end on the server
    run_pass()

    assert len(handler.message_ids) == len(set(handler.message_ids))  # nothing went twice
    statuses = list(EmailSend.objects.values_list("status", flat=True))
    assert len(statuses) == ENROLLMENTS  # one row per enrollment: every step reserved exactly once
    assert statuses.count("sent") + in_doubt == ENROLLMENTS
    assert statuses.count("sent") >= sent_before
    assert len(handler.message_ids) >= statuses.count("sent")  # every sent row reached the server
    assert len(handler.message_ids) <= statuses.count("sent") + in_doubt
    assert not Enrollment.objects.filter(state="active").exists()  # one step each: all completed
    print(
        f"killed {WORKERS} workers: {in_doubt} unconfirmed, {sent_before} sent before, "
        f"{statuses.count('sent')} sent after recovery, {len(handler.message_ids)} received"
    )
