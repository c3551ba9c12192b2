"""Two sender processes killed with SIGKILL in the middle of a broadcast, against a real SMTP server: a new pass
finishes it; nobody is mailed twice, nobody of the segment is missing but the one message per killed worker that
may or may not have left (unconfirmed, never retried)."""

import pytest
from django.utils import timezone

from campaigns.broadcast_sending import UNCONFIRMED
from campaigns.broadcasts import broadcast_save, broadcast_schedule, broadcast_start
from campaigns.models import Broadcast, BroadcastRecipient
from campaigns.segments import segment_save
from campaigns.sending import run_pass
from customers.models import ContactTag, Customer
from tests.faults.conftest import mail_here_to, senders_killed_mid_way

pytestmark = pytest.mark.fault

WORKERS = 2
RECIPIENTS = 150


def test_a_broadcast_killed_mid_way_is_finished_by_a_new_sender_without_duplicates(
    transactional_db, acme, sink, settings
):
    handler, port = sink
    people = Customer.objects.bulk_create(
        Customer(workspace=acme, email=f"p{n}@example.com", source="api") for n in range(RECIPIENTS)
    )
    ContactTag.objects.bulk_create(ContactTag(workspace=acme, customer=person, name="all") for person in people)
    Customer.objects.create(workspace=acme, email="untagged@example.com", source="api")
    segment = segment_save(workspace=acme, name="All", filters={"tags": ["all"]})
    broadcast = broadcast_save(workspace=acme, segment=segment, name="News", subject="News", body="Hello")
    broadcast_start(broadcast=broadcast_schedule(broadcast=broadcast), now=timezone.now())
    senders_killed_mid_way(handler, port, workers=WORKERS)
    assert 20 <= len(handler.message_ids) < RECIPIENTS  # killed mid-broadcast
    in_doubt = BroadcastRecipient.objects.filter(status="failed", error=UNCONFIRMED).count()
    assert in_doubt <= WORKERS

    # A new sender (this process) puts the dead workers' reservations back and mails the rest.
    mail_here_to(settings, port)
    while not run_pass().idle:
        pass

    assert len(handler.message_ids) == len(set(handler.message_ids))  # nothing went twice
    statuses = list(BroadcastRecipient.objects.values_list("status", flat=True))
    assert len(statuses) == RECIPIENTS  # exactly the segment, fixed at the start
    assert statuses.count("sent") + in_doubt == RECIPIENTS  # none missing but the ones in doubt
    assert statuses.count("sent") <= len(handler.message_ids) <= RECIPIENTS
    assert Broadcast.objects.get(pk=broadcast.pk).status == "sent"
    print(f"killed {WORKERS} senders mid-broadcast: {in_doubt} unconfirmed, {len(handler.message_ids)} received")
