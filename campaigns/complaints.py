"""Bounces and complaints reported by an email provider, and the campaign pause that complaints trigger."""

import logging
from datetime import timedelta
from decimal import Decimal

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone

from campaigns.broadcasts import broadcast_pause
from campaigns.models import Broadcast, BroadcastRecipient, Campaign, EmailSend, Suppression
from campaigns.services import campaign_pause, suppression_add
from customers.selectors import customer_by_email
from lftrack.errors import Unprocessable
from workspaces.models import Workspace

logger = logging.getLogger("lftrack.sender")

EVENT_TYPES = ("bounce", "complaint")
COMPLAINT_WINDOW = timedelta(days=30)


@transaction.atomic
def email_event_record(
    *,
    workspace: Workspace,
    event_type: str,
    email: str,
    message_ids: tuple[str, ...] = (),
    channel: str = "api",
    test: bool = False,
) -> Suppression:
    """A bounce suppresses `bounced`; a complaint suppresses `complained`, marks the email complained of
    and pauses its campaign past the complaint threshold. From POST /api/v1/email-events (channel "api")
    and from the providers' webhooks (campaigns/provider_hooks.py, channel "provider").

    The email complained of is the send whose Message-ID is among `message_ids`; when the report names
    none, the latest sent to the address. A report naming another Message-ID is about another email
    (the workspace's own password resets, sent through the same provider): the address is suppressed,
    no campaign is blamed. Idempotent: a provider retrying its webhook changes nothing the second time.

    `test` (a test token's report): the address is suppressed in the test identity space only, which stops
    its test contact's enrollments; no live contact or suppression is touched, and since test sends went to
    nobody, no email is marked complained of and no campaign paused.
    """
    if event_type not in EVENT_TYPES:
        raise Unprocessable("invalid type")
    reason = Suppression.Reason.BOUNCED if event_type == "bounce" else Suppression.Reason.COMPLAINED
    suppression = suppression_add(workspace=workspace, email=email, reason=reason, channel=channel, test=test)
    if event_type == "bounce" or test:
        return suppression
    named = _message_id_forms(message_ids)
    if named:
        send = _mailed(workspace).filter(message_id__in=named).first()
    else:
        send = _latest_send(workspace=workspace, email=email)
    if send is not None:
        _complaint_mark(send)
    elif named:
        recipient = BroadcastRecipient.objects.filter(workspace=workspace, message_id__in=named).first()
        if recipient is not None:
            _broadcast_complaint_mark(recipient)
    return suppression


def _message_id_forms(message_ids: tuple[str, ...]) -> set[str]:
    """Our Message-ID is stored as sent, `<...>`; providers quote it with or without the brackets."""
    return {f"<{m.strip().strip('<>')}>" for m in message_ids if m and "@" in m and "\x00" not in m}


def _mailed(workspace: Workspace):
    """The workspace's sends that went to someone: a test send (test mode) mailed nobody."""
    return EmailSend.objects.filter(workspace=workspace).exclude(status=EmailSend.Status.TEST)


def _latest_send(*, workspace: Workspace, email: str) -> EmailSend | None:
    sends = _mailed(workspace).order_by("-sent_at")
    # Providers report the address as we sent it: the (workspace, to_email, -sent_at) index answers.
    send = sends.filter(to_email=email).first()
    if send is None:  # reported in another case: we send to the contact's address as stored
        customer = customer_by_email(workspace=workspace, email=email)
        if customer is not None and customer.email != email:
            send = sends.filter(to_email=customer.email).first()
    return send


def _complaint_mark(send: EmailSend) -> None:
    # The campaign row lock serialises complaints per campaign: each count below sees the ones before.
    campaign = Campaign.objects.select_for_update(no_key=True).get(pk=send.campaign_id)
    marked = EmailSend.objects.filter(pk=send.pk, complained_at__isnull=True).update(complained_at=timezone.now())
    if not marked or campaign.status != Campaign.Status.ACTIVE:
        return
    sends, complaints = campaign_complaint_stats(campaign=campaign)
    if complaint_threshold_reached(sends=sends, complaints=complaints):
        campaign_pause(campaign=campaign)
        logger.warning(
            "campaign paused for complaints",
            extra={
                "campaign_id": campaign.pk,
                "workspace_id": campaign.workspace_id,
                "sends": sends,
                "complaints": complaints,
            },
        )


def _broadcast_complaint_mark(recipient: BroadcastRecipient) -> None:
    """A complaint about a broadcast's message (found by its Message-ID): marked, and the broadcast paused past the
    same threshold, over its own messages."""
    broadcast = Broadcast.objects.select_for_update(no_key=True).get(pk=recipient.broadcast_id)
    marked = BroadcastRecipient.objects.filter(pk=recipient.pk, complained_at__isnull=True).update(
        complained_at=timezone.now()
    )
    if not marked or broadcast.status != Broadcast.Status.SENDING:
        return
    stats = BroadcastRecipient.objects.filter(broadcast=broadcast).aggregate(
        sends=Count("pk", filter=Q(status=BroadcastRecipient.Status.SENT) | Q(complained_at__isnull=False)),
        complaints=Count("pk", filter=Q(complained_at__isnull=False)),
    )
    if complaint_threshold_reached(sends=stats["sends"], complaints=stats["complaints"]):
        broadcast_pause(broadcast=broadcast)
        logger.warning(
            "broadcast paused for complaints",
            extra={"broadcast_id": broadcast.pk, "workspace_id": broadcast.workspace_id, **stats},
        )


def campaign_complaint_stats(*, campaign: Campaign) -> tuple[int, int]:
    """(sends, complaints) of the campaign over the last 30 days; served by the (campaign, sent_at) index.

    A send that drew a complaint counts even when its delivery was unconfirmed: the complaint proves it.
    """
    stats = EmailSend.objects.filter(
        Q(status=EmailSend.Status.SENT) | Q(complained_at__isnull=False),
        campaign=campaign,
        sent_at__gte=timezone.now() - COMPLAINT_WINDOW,
    ).aggregate(sends=Count("pk"), complaints=Count("pk", filter=Q(complained_at__isnull=False)))
    return stats["sends"], stats["complaints"]


def complaint_threshold_reached(*, sends: int, complaints: int) -> bool:
    """COMPLAINT_PAUSE_PERCENT of the sends (0.3% by default), or any complaint below COMPLAINT_PAUSE_MIN_SENDS."""
    if not complaints:
        return False
    if sends < settings.COMPLAINT_PAUSE_MIN_SENDS:
        return True
    # Decimal: 0.3% of 1000 sends is exactly 3 complaints, with no float rounding either way.
    return complaints * 100 >= Decimal(str(settings.COMPLAINT_PAUSE_PERCENT)) * sends
