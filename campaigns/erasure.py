"""A person's part in campaigns, erased and exported (customers/erasure.py; docs/privacy.md, "Erasing a person").

Their enrollments, campaign leads and sends stay, so every campaign number stays true; the enrollments stop,
the sends lose the address they went to, and the address itself stays on the suppression list only as its
digest (campaigns/digests.py), which the sender, the leads endpoint and the pixel's confirmations check.
"""

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from campaigns.digests import email_digest
from campaigns.models import BroadcastRecipient, EmailSend, Enrollment, Suppression
from clicks.models import Click
from customers.models import Customer
from lftrack.fields import iso_utc, optional

State = Enrollment.State


def person_erase(customer: Customer) -> None:
    """Stop their enrollments, forget the address of every send to them, and replace any suppression of their
    address with one of its digest (made even when there was none: an erased person is never mailed again)."""
    now = timezone.now()
    enrollments = Enrollment.objects.filter(workspace_id=customer.workspace_id, customer=customer)
    enrollments.filter(state__in=[State.ACTIVE, State.PENDING]).update(
        state=State.STOPPED, stopped_at=now, next_send_at=None
    )
    enrollments.exclude(held_name="").update(held_name="")
    sends = EmailSend.objects.filter(workspace_id=customer.workspace_id, enrollment__customer=customer)
    sends.update(to_email="", error="")
    # The clicks on their emails' tracked links (clicks/recipients.py) stay counted per step; what their browser
    # said goes, as it does for the clicks their conversions came by (conversions/erasure.py).
    Click.objects.filter(workspace_id=customer.workspace_id, email_send_id__in=sends.values("pk")).update(
        user_agent="", referrer="", city=""
    )
    # Their broadcast messages stay counted per broadcast, without the address; one not sent yet never will be.
    recipients = BroadcastRecipient.objects.filter(customer=customer)
    recipients.filter(status__in=[BroadcastRecipient.Status.PENDING, BroadcastRecipient.Status.HELD]).update(
        status=BroadcastRecipient.Status.SKIPPED
    )
    recipients.update(to_email="", error="")
    Click.objects.filter(workspace_id=customer.workspace_id, broadcast_recipient_id__in=recipients.values("pk")).update(
        user_agent="", referrer=""
    )
    if not customer.email:
        return
    digest = email_digest(workspace_id=customer.workspace_id, email=customer.email)
    Suppression.objects.filter(
        workspace_id=customer.workspace_id, email=customer.email.lower(), is_test=customer.is_test
    ).delete()
    with transaction.atomic():  # a savepoint: the digest may be there already (the address was erased before)
        Suppression.objects.bulk_create(
            [
                Suppression(
                    workspace_id=customer.workspace_id,
                    email=digest,
                    reason=Suppression.Reason.ERASED,
                    is_test=customer.is_test,
                )
            ],
            ignore_conflicts=True,
        )


def person_export(customer: Customer) -> dict:
    """Their enrollments, the emails sent to them (sequence steps and broadcasts), and their address's suppression."""
    enrollments = Enrollment.objects.filter(workspace_id=customer.workspace_id, customer=customer).select_related(
        "campaign"
    )
    sends = EmailSend.objects.filter(workspace_id=customer.workspace_id, enrollment__customer=customer).select_related(
        "campaign", "campaign_email"
    )
    keys = [customer.email.lower(), email_digest(workspace_id=customer.workspace_id, email=customer.email)]
    suppressions = Suppression.objects.filter(
        Q(email__in=keys) if customer.email else Q(pk__in=[]),
        workspace_id=customer.workspace_id,
        is_test=customer.is_test,
    )
    return {
        "enrollments": [
            {
                "id": e.pk,
                "campaign": e.campaign.slug,
                "state": e.state,
                "enrolled_at": iso_utc(e.enrolled_at),
                "stopped_at": e.stopped_at and iso_utc(e.stopped_at),
                "completed_at": e.completed_at and iso_utc(e.completed_at),
                "held_name": optional(e.held_name),
            }
            for e in enrollments.order_by("enrolled_at", "pk")
        ],
        "emails": [
            {
                "campaign": s.campaign.slug,
                "position": s.position,
                "subject": s.campaign_email.subject if s.campaign_email else None,
                "to": optional(s.to_email),
                "status": s.status,
                "sent_at": iso_utc(s.sent_at),
                "complained_at": s.complained_at and iso_utc(s.complained_at),
            }
            for s in sends.order_by("sent_at", "pk")
        ],
        "broadcasts": [
            {
                "broadcast": r.broadcast.name,
                "subject": r.broadcast.subject,
                "to": optional(r.to_email),
                "status": r.status,
                "sent_at": r.sent_at and iso_utc(r.sent_at),
                "complained_at": r.complained_at and iso_utc(r.complained_at),
            }
            for r in BroadcastRecipient.objects.filter(customer=customer).select_related("broadcast").order_by("pk")
        ],
        "suppressions": [
            {"reason": s.reason, "since": iso_utc(s.created_at)} for s in suppressions.order_by("created_at", "pk")
        ],
    }
