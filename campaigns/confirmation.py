"""Double opt-in: the confirmation email of an enrollment the pixel made, its signed link, and confirming.

The pixel's key is public and any page can mint a click, so an enrollment from it could name anyone's
address: it waits (`pending`) until the person follows the link of one confirmation email. That email
has fixed wording (the workspace's name and the link, nothing anyone could have typed into the pixel),
goes at most once per address per day in a workspace and at most CONFIRMATIONS_PER_DAY per workspace,
never to a suppressed address, and does not count against the daily sending limit.
"""

import logging
import re
from datetime import datetime, timedelta

from django.conf import settings
from django.core import signing
from django.core.mail import EmailMessage
from django.db import transaction
from django.db.models.functions import Lower
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone

from campaigns.digests import suppression_keys
from campaigns.mail import message_id_new
from campaigns.models import CampaignLead, Enrollment, Suppression
from campaigns.schedule import enrollment_next_send_at
from campaigns.services import CONFIRM_WITHIN, LeadOutcome, _share_sequence, enrollment_event
from customers.models import Customer
from lftrack.db import sql_cursor
from lftrack.errors import BadRequest
from lftrack.fairshare import in_turns, waiting_workspaces_sql

logger = logging.getLogger("lftrack.sender")
State = Enrollment.State
_SALT = "lftrack.campaigns.confirm"
INVALID_LINK = "invalid confirmation link"
_BATCH = 100
# A name is kept only if it reads as a name: no link, no control characters (docs/matching.md, "The pixel").
_NOT_A_NAME = re.compile(r"(?i)://|www\.|[a-z0-9-]+\.[a-z]{2,}(?:/|\b)|[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def name_to_hold(name: str) -> str:
    name = (name or "").strip()[:200]
    return "" if _NOT_A_NAME.search(name) else name


def confirm_token(enrollment_id: int) -> str:
    return signing.TimestampSigner(salt=_SALT).sign(str(enrollment_id))


def confirm_url(enrollment_id: int) -> str:
    return settings.PUBLIC_BASE_URL + reverse("confirm", args=[confirm_token(enrollment_id)])


def confirm_token_read(token: str) -> int:
    if not token or len(token) > 200:
        raise BadRequest(INVALID_LINK)
    try:
        value = signing.TimestampSigner(salt=_SALT).unsign(token, max_age=CONFIRM_WITHIN)
    except signing.BadSignature:  # tampered, foreign or older than the confirmation window
        raise BadRequest(INVALID_LINK) from None
    return int(value)


def confirmation_message(enrollment: Enrollment) -> EmailMessage:
    workspace = enrollment.campaign.workspace.name or enrollment.campaign.workspace.slug
    return EmailMessage(
        subject=f"Confirm your subscription to {workspace}",
        body=render_to_string("emails/confirmation.txt", {"workspace": workspace, "url": confirm_url(enrollment.pk)}),
        to=[enrollment.customer.email],
        headers={"Message-ID": message_id_new()},
    )


def pending_enrollments_expire(*, now: datetime) -> int:
    """Delete the pending enrollments nobody confirmed in time (the sender's passes and a periodic job)."""
    deleted, _ = Enrollment.objects.filter(state=State.PENDING, confirm_by__lte=now).delete()
    return deleted


_TABLE = Enrollment._meta.db_table
_WAITING = "e.state = 'pending' AND e.confirmation_sent_at IS NULL"
# The batch's rows, locked: each workspace waiting and under its quota (CONFIRMATIONS_PER_DAY over the last day)
# gives its oldest, at most what is left of its quota and an equal share of the batch (at least one). The
# workspaces are found through campaigns_enrollment_unmailed (one probe each), and each one's
# confirmations of the day are counted on campaigns_enrollment_mailed.
_CANDIDATES_SQL = f"""
    WITH RECURSIVE waiting (workspace_id, confirm_by) AS (
        {waiting_workspaces_sql(table=_TABLE, condition=_WAITING, first="confirm_by")}
    ), open AS MATERIALIZED (
        SELECT w.workspace_id, %(quota)s - sent.count AS room
        FROM waiting w CROSS JOIN LATERAL (
            SELECT count(*) FROM {_TABLE} s
            WHERE s.workspace_id = w.workspace_id AND s.confirmation_sent_at > %(day_ago)s
        ) sent
        WHERE sent.count < %(quota)s
    )
    SELECT picked.id FROM open CROSS JOIN LATERAL (
        SELECT e.id FROM {_TABLE} e
        WHERE e.workspace_id = open.workspace_id AND {_WAITING} AND e.confirm_by > %(now)s
        ORDER BY e.confirm_by
        LIMIT LEAST(open.room, GREATEST(1, %(batch)s / (SELECT count(*) FROM open)))
        FOR UPDATE OF e SKIP LOCKED
    ) picked
"""


def confirmation_candidates_sql(*, now: datetime, batch_size: int) -> tuple[str, dict]:
    """The statement choosing (and locking) a batch of confirmations to mail, and its parameters."""
    params = {
        "now": now,
        "day_ago": now - timedelta(days=1),
        "quota": settings.CONFIRMATIONS_PER_DAY,
        "batch": batch_size,
    }
    return _CANDIDATES_SQL, params


def confirmations_send(*, now: datetime, mailer) -> int:
    """One batch of the sender's pass: delete what waited too long, then mail the confirmations due, a fair
    share of each workspace's (`_CANDIDATES_SQL`). Returns how many went. At most once: an enrollment is
    marked before its email leaves."""
    pending_enrollments_expire(now=now)
    waiting = Enrollment.objects.filter(state=State.PENDING, confirmation_sent_at__isnull=True, confirm_by__gt=now)
    if not waiting.exists():
        return 0
    smtp = mailer.connection()  # unusable: nothing is marked, the next pass tries again
    with transaction.atomic():
        with sql_cursor() as cursor:
            cursor.execute(*confirmation_candidates_sql(now=now, batch_size=_BATCH))
            ids = [row.id for row in cursor.fetchall()]
        chosen = Enrollment.objects.filter(pk__in=ids).select_related("customer", "campaign__workspace")
        due = in_turns(chosen.order_by("confirm_by"), key=lambda enrollment: enrollment.workspace_id)
        to_send, dropped = _sort(due, now=now)
        Enrollment.objects.filter(pk__in=[enrollment.pk for enrollment in dropped]).delete()
        Enrollment.objects.filter(pk__in=[enrollment.pk for enrollment in to_send]).update(confirmation_sent_at=now)
    sent = 0
    for enrollment in to_send:
        try:
            sent += smtp.send_messages([confirmation_message(enrollment)])
        except Exception as exc:  # at most once: a confirmation that failed is not retried; the enrollment expires
            logger.warning(
                "confirmation not sent",
                extra={
                    "enrollment_id": enrollment.pk,
                    "workspace_id": enrollment.workspace_id,
                    "error": type(exc).__name__,
                },
            )
    return sent


def _sort(due: list[Enrollment], *, now: datetime) -> tuple[list[Enrollment], list[Enrollment]]:
    """(to mail now, to drop): a suppressed address, or one mailed a confirmation in this workspace within a
    day (this batch included), is dropped. The workspace's quota was applied when the batch was chosen."""
    day_ago = now - timedelta(days=1)
    to_send, dropped, mailed = [], [], set()
    for enrollment in due:
        workspace_id, email = enrollment.workspace_id, enrollment.customer.email.lower()
        recent = Enrollment.objects.filter(workspace_id=workspace_id, confirmation_sent_at__gt=day_ago)
        if (
            not email
            or (workspace_id, email) in mailed
            or Suppression.objects.filter(
                workspace_id=workspace_id,
                email__in=suppression_keys(workspace_id=workspace_id, email=email),
                is_test=False,
            ).exists()
            or recent.alias(email_lower=Lower("customer__email")).filter(email_lower=email).exists()
        ):
            dropped.append(enrollment)
            continue
        mailed.add((workspace_id, email))
        to_send.append(enrollment)
    return to_send, dropped


@transaction.atomic
def enrollment_confirm(*, enrollment_id: int) -> Enrollment | None:
    """The person confirmed: the pending enrollment becomes active and is scheduled as any other; the name
    they gave fills a blank name (never replaces one); the campaign counts a lead. None when there is
    nothing pending any more (expired, or suppressed since). Confirming twice changes nothing."""
    enrollment = Enrollment.objects.select_related("customer").filter(pk=enrollment_id).first()
    if enrollment is None:
        return None
    _share_sequence(enrollment.campaign_id)
    enrollment = Enrollment.objects.select_for_update().select_related("customer").get(pk=enrollment_id)
    if enrollment.state != State.PENDING:
        return enrollment
    customer = enrollment.customer
    # The pixel has no test mode: its contacts and their suppressions are live ones.
    keys = suppression_keys(workspace_id=enrollment.workspace_id, email=customer.email)
    if (
        not keys
        or Suppression.objects.filter(workspace_id=enrollment.workspace_id, email__in=keys, is_test=False).exists()
    ):
        return None
    now = timezone.now()
    enrollment.state = State.ACTIVE
    enrollment.enrolled_at = now
    enrollment.confirm_by = None
    enrollment.next_send_at = enrollment_next_send_at(enrollment=enrollment)
    enrollment.save(update_fields=["state", "enrolled_at", "confirm_by", "next_send_at"])
    if enrollment.held_name and not customer.name:
        Customer.objects.filter(pk=customer.pk, name="").update(name=enrollment.held_name, updated_at=now)
    CampaignLead.objects.create(
        workspace_id=enrollment.workspace_id,
        campaign_id=enrollment.campaign_id,
        customer=customer,
        enrollment=enrollment,
        outcome=LeadOutcome.CREATED if customer.source == Customer.Channel.PIXEL else LeadOutcome.REUSED,
        channel=Customer.Channel.PIXEL,
    )
    enrollment_event(enrollment, "enrollment.created")
    return enrollment
