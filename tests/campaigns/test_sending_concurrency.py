"""Two sender workers at once on PostgreSQL: every step goes exactly once, the daily limit holds, the index serves."""

import threading
from collections import Counter
from datetime import timedelta

import pytest
from django.core import mail
from django.db import connection, transaction
from django.utils import timezone

from campaigns.models import EmailSend, Enrollment
from campaigns.sending import PassResult, claim_sql, run_pass
from customers.models import Customer
from tests.factories import CampaignEmailFactory, CampaignFactory, WorkspaceFactory

pytestmark = pytest.mark.django_db(transaction=True)


def seed(count: int, *, steps: int, daily_send_limit: int | None = None):
    """`count` enrollments due now in one workspace's campaign of `steps` zero-delay steps."""
    workspace = WorkspaceFactory(slug="acme", daily_send_limit=daily_send_limit)
    campaign = CampaignFactory(workspace=workspace, slug="spring")
    for position in range(1, steps + 1):
        CampaignEmailFactory(campaign=campaign, position=position, delay_minutes=0, subject=f"Step {position}")
    customers = Customer.objects.bulk_create(
        Customer(workspace=workspace, email=f"p{i}@example.com", name=f"P{i}", source="api") for i in range(count)
    )
    now = timezone.now()
    Enrollment.objects.bulk_create(
        Enrollment(workspace=workspace, campaign=campaign, customer=customer, enrolled_at=now, next_send_at=now)
        for customer in customers
    )
    return campaign


def two_workers(batch_size: int) -> list[PassResult]:
    """Two threads released at once, each running passes until one finds nothing to do."""
    barrier = threading.Barrier(2)
    results: list = [None, None]

    def work(i: int) -> None:
        total = PassResult()
        try:
            barrier.wait(timeout=30)
            while True:
                result = run_pass(batch_size=batch_size)
                total.add(result)
                if result.idle:
                    break
            results[i] = total
        except Exception as exc:  # reported by the assertions, never swallowed
            results[i] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads)
    assert all(isinstance(result, PassResult) for result in results), results
    return results


def test_two_workers_over_200_due_enrollments_send_each_step_exactly_once(mailoutbox):
    seed(200, steps=3)
    results = two_workers(batch_size=25)

    assert sum(result.sent for result in results) == 600
    assert sum(result.failed + result.deferred + result.skipped for result in results) == 0
    assert EmailSend.objects.count() == 600
    assert EmailSend.objects.filter(status="sent").count() == 600
    assert Counter(EmailSend.objects.values_list("position", flat=True)) == {1: 200, 2: 200, 3: 200}
    delivered = Counter((m.to[0], m.subject) for m in mail.outbox)
    assert len(delivered) == 600 and set(delivered.values()) == {1}
    assert set(Enrollment.objects.values_list("state", "last_sent_position", "next_send_at")) == {
        ("completed", 3, None)
    }


def test_two_workers_never_exceed_the_daily_limit_together(mailoutbox):
    seed(200, steps=1, daily_send_limit=150)
    results = two_workers(batch_size=20)

    assert sum(result.sent for result in results) == 150
    assert sum(result.deferred for result in results) == 50
    assert EmailSend.objects.count() == len(mail.outbox) == 150
    midnight = timezone.now().replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=1)
    waiting = Enrollment.objects.filter(last_sent_position=0)
    assert waiting.count() == 50
    assert set(waiting.values_list("state", "next_send_at")) == {("active", midnight)}


def test_the_claim_query_is_served_by_the_due_index():
    campaign = seed(100, steps=1)
    # Many enrollments outside the index (completed) and inside it but not due yet.
    later = timezone.now() + timedelta(days=1)
    customers = Customer.objects.bulk_create(
        Customer(workspace_id=campaign.workspace_id, email=f"q{i}@example.com", source="api") for i in range(3000)
    )
    Enrollment.objects.bulk_create(
        Enrollment(
            workspace_id=campaign.workspace_id,
            campaign=campaign,
            customer=customer,
            enrolled_at=later,
            state="completed" if i % 2 else "active",
            next_send_at=None if i % 2 else later,
        )
        for i, customer in enumerate(customers)
    )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE campaigns_enrollment")
    with transaction.atomic(), connection.cursor() as cursor:
        sql, params = claim_sql(now=timezone.now(), batch_size=100)
        cursor.execute(f"EXPLAIN {sql}", params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "campaigns_enrollment_due" in plan, plan
    assert "LockRows" in plan, plan
    assert "Seq Scan on campaigns_enrollment" not in plan, plan
