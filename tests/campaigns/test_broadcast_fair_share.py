"""A broadcast of thousands is a noisy neighbour the sender keeps in its place: another workspace's sequence email,
confirmation and broadcast, and the same workspace's sequence email, all go in the first pass's first round
(docs/email.md, "Broadcasts"; docs/concurrency.md, "Fair shares")."""

import pytest
from django.core import mail
from django.db import connection

from campaigns.broadcast_sending import _CLAIM_SQL
from campaigns.broadcasts import broadcast_save, broadcast_schedule, broadcast_start
from campaigns.models import BroadcastRecipient
from campaigns.segments import segment_save
from campaigns.sending import run_pass
from customers.models import ContactTag, Customer
from tests.campaigns.test_fair_share import due, mailed, one_step, pending
from tests.factories import CampaignFactory

pytestmark = pytest.mark.django_db


def flood(workspace, count: int, *, prefix: str):
    """A started broadcast to `count` tagged contacts of the workspace."""
    people = Customer.objects.bulk_create(
        Customer(workspace=workspace, email=f"{prefix}{n}@example.com", source="api") for n in range(count)
    )
    ContactTag.objects.bulk_create(ContactTag(workspace=workspace, customer=person, name="all") for person in people)
    segment = segment_save(workspace=workspace, name=f"{prefix} list", filters={"tags": ["all"]})
    broadcast = broadcast_save(workspace=workspace, segment=segment, name="Big", subject="News", body="Hello")
    return broadcast_schedule(broadcast=broadcast)


def test_a_broadcast_of_thousands_leaves_other_workspaces_and_its_own_sequence_on_time(
    acme, globex, settings, mailoutbox
):
    settings.DEFAULT_DAILY_SEND_LIMIT = 100_000
    settings.CONFIRMATIONS_PER_DAY = 100
    flood(acme, 3000, prefix="flood")
    due(one_step(acme, "spring"), 1, prefix="acme-seq")  # acme's own sequence email
    due(one_step(globex, "news"), 1, prefix="globex-seq")
    pending(CampaignFactory(workspace=globex, slug="double"), 1, prefix="globex-confirm")
    flood(globex, 1, prefix="globex-bc")

    first = run_pass(
        batch_size=100, should_stop=lambda: True
    )  # one round: confirmations, a sequence and a broadcast batch
    assert mailed("globex-confirm") == ["globex-confirm0@example.com"]
    assert mailed("globex-seq") == ["globex-seq0@example.com"]
    assert mailed("acme-seq") == ["acme-seq0@example.com"]
    assert mailed("globex-bc") == ["globex-bc0@example.com"]
    assert 1 <= len(mailed("flood")) <= 100  # a share of one batch
    assert first.broadcast <= 100

    while not run_pass().idle:
        pass
    assert len(mailed("flood")) == 3000 and len(set(mailed("flood"))) == 3000
    assert len(mail.outbox) == 3004


def test_the_broadcast_claim_skip_scans_the_pending_index(acme, globex):
    for workspace, count in ((acme, 3000), (globex, 1)):
        broadcast_start(broadcast=flood(workspace, count, prefix=workspace.slug), now=workspace.created_at)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE campaigns_broadcastrecipient")
        cursor.execute(f"EXPLAIN {_CLAIM_SQL}", {"batch": 100})
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "campaigns_bcrecipient_pending" in plan, plan
    assert "LockRows" in plan and "Seq Scan on campaigns_broadcastrecipient" not in plan, plan
    assert BroadcastRecipient.objects.count() == 3001
