"""Sender workers killed with SIGKILL in the middle of a batch, against a real SMTP server: at most one
message per worker is left in doubt, the rest are recovered by the next pass, and nothing goes twice."""

import pytest
from django.utils import timezone

from campaigns.models import EmailSend, Enrollment
from campaigns.sending import UNCONFIRMED, run_pass
from tests.factories import CampaignEmailFactory, CampaignFactory, CustomerFactory, EnrollmentFactory
from tests.faults.conftest import mail_here_to, senders_killed_mid_way

pytestmark = pytest.mark.fault

WORKERS = 2
ENROLLMENTS = 120  # bounded: about 2.5 s of mail per worker at the sink's pace (tests/faults/conftest.py)


def test_killed_workers_leave_at_most_one_message_each_in_doubt(transactional_db, acme, sink, settings):
    handler, port = sink
    campaign = CampaignFactory(workspace=acme, slug="spring")
    CampaignEmailFactory(campaign=campaign, position=1, delay_minutes=0)
    now = timezone.now()
    for i in range(ENROLLMENTS):
        EnrollmentFactory(
            campaign=campaign, customer=CustomerFactory(workspace=acme, email=f"p{i}@example.com"), next_send_at=now
        )
    senders_killed_mid_way(handler, port, workers=WORKERS)
    assert 20 <= len(handler.message_ids) < ENROLLMENTS  # killed mid-batch

    in_doubt = EmailSend.objects.filter(status="failed", error=UNCONFIRMED).count()
    assert in_doubt <= WORKERS
    sent_before = EmailSend.objects.filter(status="sent").count()
    assert EmailSend.objects.filter(status="reserved").exists()  # what the dead workers never handed over

    # The next pass, in this process, releases the dead workers' reservations and sends the rest.
    mail_here_to(settings, port)
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
