"""The broadcast sender: a batch of broadcast recipients (a fair share per workspace) reserved, mailed and recorded.

The same guarantee and steps as the sequence sender (campaigns/sending.py), on BroadcastRecipient rows fixed
when the broadcast started: reserve in one short transaction (claimed with `FOR UPDATE SKIP LOCKED`, so two
senders take disjoint rows; suppressed addresses skipped; the workspace's daily limit shared with its sequence
emails), mark each message unconfirmed just before it is handed over, then record what the server said. A sender
killed at any moment leaves at most one message unconfirmed, never sent again; its other reserved rows are put
back to pending by the next pass of any sender once its database session is gone (`broadcasts_recover`).
`run_pass` alternates a sequence batch and a broadcast batch, so a broadcast of 100,000 holds another
workspace's sequence emails back by one batch at most (docs/email.md, "Broadcasts").
"""

import logging
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from django.core.mail import EmailMessage
from django.db import connection, transaction
from django.db.models import OuterRef, Subquery
from django.db.models.functions import Lower

from campaigns.broadcasts import broadcasts_finish
from campaigns.daily_limits import daily_allowance
from campaigns.digests import suppression_keys
from campaigns.mail import message_id_new
from campaigns.models import Broadcast, BroadcastRecipient, Suppression
from campaigns.outgoing import batch_links, outgoing_message
from campaigns.services import suppression_add
from campaigns.smtp import Delivery, Mailer, deliver
from customers.models import Customer
from lftrack.db import sql_cursor
from lftrack.errors import Unprocessable
from lftrack.fairshare import in_turns, waiting_workspaces_sql
from workspaces.models import Workspace

logger = logging.getLogger("lftrack.sender")

Status = BroadcastRecipient.Status
UNCONFIRMED = "unconfirmed: the worker stopped before the SMTP server's answer was recorded; not retried (at most once)"


@dataclass
class BroadcastBatch:
    """What one broadcast batch did."""

    sent: int = 0
    skipped: int = 0  # suppressed, or no address any more
    failed: int = 0
    deferred: int = 0  # refused for now, or never handed over: pending again
    limited: int = 0  # over the workspace's daily limit: pending until tomorrow's window
    bounced: int = 0
    smtp_error: str = ""
    more: bool = False  # some workspace took its whole share: more may be pending


@dataclass
class _Item:
    recipient: BroadcastRecipient
    broadcast: Broadcast
    links: dict[str, str] = field(default_factory=dict)
    workspace: Workspace | None = None


_RECIPIENTS = BroadcastRecipient._meta.db_table
_PENDING = "e.status = 'pending'"
# As the sequence claim: each workspace with pending recipients (a skip scan of the partial index
# campaigns_bcrecipient_pending) gives its oldest, an equal share of the batch, locked, skipping rows other
# senders hold. Only a sending broadcast's recipients are pending (a pause holds them, a cancel skips them).
_CLAIM_SQL = f"""
    WITH RECURSIVE waiting (workspace_id, id) AS (
        {waiting_workspaces_sql(table=_RECIPIENTS, condition=_PENDING, first="id")}
    ), share AS (
        SELECT GREATEST(1, %(batch)s / NULLIF(count(*), 0)) AS size FROM waiting
    )
    SELECT claimed.id, share.size FROM waiting CROSS JOIN share CROSS JOIN LATERAL (
        SELECT e.id FROM {_RECIPIENTS} e
        WHERE e.workspace_id = waiting.workspace_id AND {_PENDING}
        ORDER BY e.id
        LIMIT share.size
        FOR UPDATE OF e SKIP LOCKED
    ) claimed
"""


def broadcast_batch(*, now: datetime, batch_size: int, mailer: Mailer) -> BroadcastBatch:
    """Reserve, mail and record one batch of broadcast recipients."""
    result = BroadcastBatch()
    items = _reserve(now=now, batch_size=batch_size, result=result)
    if not items:
        return result
    _prepare(items)
    delivery = deliver(items, _message, mailer, handing_over=_handing_over)
    _record(delivery, now=now)
    result.sent += len(delivery.accepted)
    result.failed += len(delivery.failed) + len(delivery.bounced)
    result.bounced += len(delivery.bounced)
    result.deferred += len(delivery.retry) + len(delivery.released)
    result.smtp_error = delivery.error
    broadcasts_finish(broadcast_ids={item.broadcast.pk for item in items}, now=now)
    return result


def _reserve(*, now: datetime, batch_size: int, result: BroadcastBatch) -> list[_Item]:
    with transaction.atomic():
        with sql_cursor() as cursor:
            cursor.execute(_CLAIM_SQL, {"batch": batch_size})
            rows = cursor.fetchall()
        if not rows:
            return []
        claimed = (
            BroadcastRecipient.objects.filter(pk__in=[row.id for row in rows])
            .select_related("customer", "broadcast")
            .annotate(email_lower=Lower("customer__email"))
            .order_by("pk")
        )
        due = in_turns(claimed, key=lambda recipient: recipient.workspace_id)
        result.more = max(Counter(r.workspace_id for r in due).values()) >= rows[0].size
        suppressed = _suppressed(due)
        allowance = daily_allowance({r.workspace_id for r in due}, now=now)
        backend_pid = connection.connection.info.backend_pid
        items: list[_Item] = []
        skipped: list[int] = []
        deferred: list[int] = []
        for recipient in due:
            customer = recipient.customer
            if (
                not customer.email
                or customer.erased_at is not None
                or recipient.email_lower in suppressed.get(recipient.workspace_id, set())
            ):
                skipped.append(recipient.pk)
                continue
            if allowance[recipient.workspace_id] <= 0:
                # Over the day's limit: it stays pending, and this workspace's rows wait for tomorrow's window
                # while other workspaces' go on (the claim gives each workspace its own share).
                deferred.append(recipient.pk)
                continue
            allowance[recipient.workspace_id] -= 1
            recipient.status, recipient.reserved_by = Status.RESERVED, backend_pid
            # The Message-ID is written when the message is handed over (_handing_over), with its state.
            recipient.to_email, recipient.message_id, recipient.sent_at = customer.email, message_id_new(), now
            items.append(_Item(recipient=recipient, broadcast=recipient.broadcast))
        if skipped:
            BroadcastRecipient.objects.filter(pk__in=skipped).update(
                status=Status.SKIPPED, error="suppressed or no address"
            )
        if items:
            # One statement for the batch (bulk_update's CASE per row and field cost half a second a batch).
            BroadcastRecipient.objects.filter(pk__in=[item.recipient.pk for item in items]).update(
                status=Status.RESERVED,
                reserved_by=backend_pid,
                sent_at=now,
                to_email=Subquery(Customer.objects.filter(pk=OuterRef("customer_id")).values("email")[:1]),
            )
        result.skipped += len(skipped)
        result.limited += len(deferred)
    if deferred and not items:
        result.more = False  # only rows over their limit came back: nothing more to do in this pass
    if skipped:
        broadcasts_finish(broadcast_ids={r.broadcast_id for r in due}, now=now)
    return items


def _suppressed(recipients: list[BroadcastRecipient]) -> dict[int, set[str]]:
    """{workspace id: lower(email)} of the claimed addresses on the workspace's (live) suppression list, an erased
    person's by its digest (campaigns/digests.py): one query per workspace on the (workspace, email) index."""
    by_workspace: dict[int, dict[str, str]] = defaultdict(dict)
    for recipient in recipients:
        if recipient.email_lower:
            for key in suppression_keys(workspace_id=recipient.workspace_id, email=recipient.email_lower):
                by_workspace[recipient.workspace_id][key] = recipient.email_lower
    found: dict[int, set[str]] = defaultdict(set)
    for workspace_id, keys in by_workspace.items():
        rows = Suppression.objects.filter(workspace_id=workspace_id, email__in=keys, is_test=False)
        found[workspace_id].update(keys[email] for email in rows.values_list("email", flat=True))
    return found


def _prepare(items: list[_Item]) -> None:
    """Each broadcast's tracked links and workspace, once per broadcast and workspace of the batch."""
    links = batch_links(item.broadcast for item in items)
    workspaces = Workspace.objects.in_bulk({item.recipient.workspace_id for item in items})
    for item in items:
        item.links = links[item.broadcast.pk]
        item.workspace = workspaces[item.recipient.workspace_id]


def _message(item: _Item) -> EmailMessage:
    return outgoing_message(
        content=item.broadcast,
        customer=item.recipient.customer,
        links=item.links,
        workspace=item.workspace,
        workspace_id=item.recipient.workspace_id,
        message_id=item.recipient.message_id,
        broadcast_recipient_id=item.recipient.pk,
    )


# As the sequence sender's: the next message becomes unconfirmed, the ones accepted since the last call sent.
_HANDING_OVER_SQL = f"""UPDATE {_RECIPIENTS}
    SET status = CASE WHEN id = %(next)s THEN %(failed)s ELSE %(sent)s END,
        message_id = CASE WHEN id = %(next)s THEN %(message_id)s ELSE message_id END,
        error = CASE WHEN id = %(next)s THEN %(unconfirmed)s ELSE '' END, reserved_by = NULL
    WHERE id = ANY(%(ids)s)"""


def _handing_over(item: _Item, accepted: list[_Item]) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            _HANDING_OVER_SQL,
            {
                "next": item.recipient.pk,
                "message_id": item.recipient.message_id,
                "ids": [item.recipient.pk, *(done.recipient.pk for done in accepted)],
                "failed": Status.FAILED,
                "sent": Status.SENT,
                "unconfirmed": UNCONFIRMED,
            },
        )


def _record(delivery: Delivery[_Item], *, now: datetime) -> None:
    with transaction.atomic():
        if delivery.accepted:
            BroadcastRecipient.objects.filter(pk__in=[item.recipient.pk for item in delivery.accepted]).update(
                status=Status.SENT, error="", reserved_by=None
            )
        for item, error, reason in [*delivery.failed, *delivery.bounced]:
            BroadcastRecipient.objects.filter(pk=item.recipient.pk).update(
                status=Status.FAILED, error=error, reserved_by=None
            )
            logger.warning(
                "email not sent",
                extra={
                    "broadcast_recipient_id": item.recipient.pk,
                    "workspace_id": item.recipient.workspace_id,
                    "broadcast_id": item.broadcast.pk,
                    "error": reason,
                },
            )
        for item, _, _ in delivery.bounced:
            try:
                suppression_add(
                    workspace=item.workspace,
                    email=item.recipient.to_email,
                    reason=Suppression.Reason.BOUNCED,
                    channel="smtp",
                )
            except Unprocessable as exc:
                logger.warning("bounced address not suppressed", extra={"error": exc.message})
        # Certainly not sent (refused for now, or never handed over): pending again, for a later batch.
        put_back = [item.recipient.pk for item in [*delivery.retry, *delivery.released]]
        if put_back:
            BroadcastRecipient.objects.filter(pk__in=put_back).update(
                status=Status.PENDING, reserved_by=None, to_email="", message_id="", sent_at=None
            )


# Reservations whose sender's database session is gone: it died before handing them over.
_ABANDONED_SQL = f"""SELECT id FROM {_RECIPIENTS} WHERE status = %(reserved)s
    AND reserved_by NOT IN (SELECT pid FROM pg_stat_activity WHERE pid IS NOT NULL)
    FOR UPDATE SKIP LOCKED"""


def broadcasts_recover() -> int:
    """Put back to pending the reservations of senders that died before handing them over; returns how many.
    One whose message was on its way is `failed` / unconfirmed by then, never here: it is not sent again."""
    with transaction.atomic():
        with sql_cursor() as cursor:
            cursor.execute(_ABANDONED_SQL, {"reserved": Status.RESERVED})
            ids = [row.id for row in cursor.fetchall()]
        if not ids:
            return 0
        BroadcastRecipient.objects.filter(pk__in=ids).update(
            status=Status.PENDING, reserved_by=None, to_email="", message_id="", sent_at=None
        )
    logger.warning("released the broadcast reservations of a worker that died", extra={"count": len(ids)})
    return len(ids)
