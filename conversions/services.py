"""Recording conversions (one function serves the server API, the pixel and the admin) and safe retries."""

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from campaigns.confirmation import name_to_hold
from campaigns.models import Campaign, CampaignPost
from campaigns.services import LeadResult, campaign_enroll
from clicks.models import Click, Link
from conversions.models import ConversionEvent, IdempotencyKey
from customers.models import Customer
from customers.services import customer_match
from lftrack.db import from_row, prepared_cursor
from lftrack.errors import Unprocessable
from webhooks.outbox import emitted_sql, event_queue
from workspaces.models import Workspace

# A retried sale replays the first answer for this long (docs/api.md, "Idempotency-Key"); older keys count as new.
IDEMPOTENCY_TTL = timedelta(hours=24)
IDEMPOTENCY_KEY_MAX = 255


# The columns a conversion's INSERT sends, in its table's order; the workspace, click and link come from the click.
# One tuple names the column list, the parameters and the instance's fields (lftrack.db.from_row).
_SENT = (
    "customer_id",
    "event",
    "value_cents",
    "event_name",
    "meta",
    "occurred_at",
    "channel",
    "invoice_id",
    "currency",
    "is_test",
)
_META = ConversionEvent._meta.get_field("meta")


# The event row takes its click and link from the click itself: the lookup (scoped to the
# workspace, so another workspace's click is unknown) and the insert are one round trip.
# A sale repeating an invoice id inserts nothing (the unique index on it), whoever committed it first.
# The click is locked as the foreign key's check would lock it: one deleted meanwhile (retention's purge) is
# then no row, so `unknown click_id`, where the check would have failed the statement (a 500).
# A backdated event (occurred_at sent) needs its click to have existed by then. Only then: the click's
# created_at may come from PostgreSQL's clock (the redirect's now()) and ours may run a little behind.
def _insert_sql(*, backdated: bool) -> str:
    since = " AND created_at <= %(occurred_at)s" if backdated else ""
    return f"""INSERT INTO {ConversionEvent._meta.db_table} (workspace_id, click_id, link_id, {", ".join(_SENT)})
    SELECT workspace_id, id, link_id, {", ".join(f"%({column})s" for column in _SENT)}
    FROM {Click._meta.db_table} WHERE workspace_id = %(workspace_id)s AND click_id = %(click_key)s{since}
    FOR KEY SHARE
    ON CONFLICT (workspace_id, invoice_id, is_test) WHERE invoice_id <> '' DO NOTHING
    RETURNING id, click_id, link_id, workspace_id, customer_id, event, is_test"""


# The same round trip writes the `lead.created` or `sale.created` webhook event when an endpoint wants it
# (webhooks/outbox.py), and finds the campaign of the link's post (of this workspace), so the
# conversions of posts outside campaigns (most of them) never look for one.
_HOOK_SQL = emitted_sql(
    rows="event",
    workspace_id="event.workspace_id",
    type="event.event || '.created'",
    test="event.is_test",
    subject_id="event.id",
    customer_id="event.customer_id",
)


def _record_sql(*, backdated: bool) -> str:
    return f"""WITH event AS ({_insert_sql(backdated=backdated)}), hook AS ({_HOOK_SQL})
    SELECT event.id, event.click_id, event.link_id, campaign.id AS campaign_id, (SELECT id FROM hook) AS hook_id
    FROM event JOIN {Link._meta.db_table} link ON link.id = event.link_id
    LEFT JOIN ({CampaignPost._meta.db_table} cp JOIN {Campaign._meta.db_table} campaign
        ON campaign.id = cp.campaign_id AND campaign.workspace_id = cp.workspace_id)
    ON cp.post_id = link.post_id AND cp.workspace_id = link.workspace_id"""


_RECORD_SQL = _record_sql(backdated=False)
_RECORD_BACKDATED_SQL = _record_sql(backdated=True)


@transaction.atomic
def conversion_record(
    *,
    workspace: Workspace,
    channel: str,
    event: str,
    click_id: str,
    value_cents: int | None = None,
    event_name: str = "",
    meta: dict[str, Any] | None = None,
    customer: dict[str, str] | None = None,
    invoice_id: str = "",
    occurred_at: datetime | None = None,
    currency: str | None = None,
    test: bool = False,
) -> ConversionEvent:
    """Store a lead or sale against a click of this workspace, matching the customer when one is sent.

    `currency` (an ISO 4217 code, checked by the caller) is the sale's; absent, and on leads, the workspace's.
    `test`: recorded with a test token, so kept out of every number, mail and live webhook; its customer is
    matched in the workspace's test identity space (docs/matching.md, "Test mode") and enrolled in test mode.

    A sale naming an `invoice_id` the workspace already has a sale for stores nothing and raises
    InvoiceRecorded with that first sale, even under concurrent repeats (the unique index decides).
    `occurred_at` backdates the event (the API bounds it); its click must have existed by then.

    A click of another workspace is unknown. A second lead on the same click is a second event
    (the duplicate-lead rule, docs/api.md). The pixel (channel "pixel") never moves an external_id.
    An unknown click rolls back the customer matched for it: a rejected request changes nothing.
    """
    invoice_id = invoice_id if event == ConversionEvent.Event.SALE else ""
    if invoice_id:
        _raise_if_invoiced(workspace=workspace, invoice_id=invoice_id, test=test)  # before matching: nothing to undo
    match = None
    held_name = ""
    if customer is not None and channel == Customer.Channel.PIXEL:
        # The pixel's key is public: whatever name it sends waits for the person's confirmation of a
        # campaign enrollment, and never fills a name by itself (docs/matching.md, "The pixel").
        customer = dict(customer)
        held_name = name_to_hold(customer.pop("name", "") or "")
    if customer is not None:
        match = customer_match(
            workspace=workspace,
            channel=channel,
            may_move_external_id=channel != "pixel",
            test=test,
            **customer,  # type: ignore[arg-type]  # its keys are the str fields: email, external_id, name, avatar_url
        )
    matched = match.customer if match is not None else None
    sent: dict[str, Any] = {
        "customer_id": matched.pk if matched is not None else None,
        "event": event,
        "value_cents": value_cents if event == ConversionEvent.Event.SALE else None,
        "event_name": event_name,
        "meta": meta if meta is not None else {},
        "occurred_at": occurred_at or timezone.now(),
        "channel": channel,
        "invoice_id": invoice_id,
        "currency": (event == ConversionEvent.Event.SALE and currency) or workspace.currency,
        "is_test": test,
    }
    params = {column: sent[column] for column in _SENT}
    params["meta"] = _META.get_db_prep_value(sent["meta"], connection)
    params["occurred_at"] = connection.ops.adapt_datetimefield_value(sent["occurred_at"])
    params["workspace_id"], params["click_key"] = workspace.pk, click_id
    with prepared_cursor() as cursor:
        cursor.execute(_RECORD_SQL if occurred_at is None else _RECORD_BACKDATED_SQL, params)
        row = cursor.fetchone()
    if row is None:
        if invoice_id:  # a concurrent repeat committed first; its customer match rolls back with this
            _raise_if_invoiced(workspace=workspace, invoice_id=invoice_id, test=test)
        if occurred_at is not None and Click.objects.filter(workspace=workspace, click_id=click_id).exists():
            raise Unprocessable("occurred_at is before the click")
        raise Unprocessable("unknown click_id")
    conversion = from_row(
        ConversionEvent,
        {**sent, "id": row.id, "workspace_id": workspace.pk, "click_id": row.click_id, "link_id": row.link_id},
        workspace=workspace,
        customer=matched,
    )
    if row.hook_id is not None:
        event_queue(event_id=row.hook_id, workspace_id=workspace.pk, customer_id=conversion.customer_id)
    if row.campaign_id is not None:
        conversion_enroll(
            conversion=conversion,
            campaign_id=row.campaign_id,
            customer_created=match is not None and match.created,
            held_name=held_name,
        )
    return conversion


class InvoiceRecorded(Exception):
    """The workspace already has a sale for this invoice id: `sale`, with `click_key` its click's id."""

    def __init__(self, sale: ConversionEvent):
        super().__init__(sale.pk)
        self.sale = sale


def _raise_if_invoiced(*, workspace: Workspace, invoice_id: str, test: bool) -> None:
    sale = (
        ConversionEvent.objects.filter(workspace=workspace, invoice_id=invoice_id, is_test=test)
        .select_related("customer")
        .annotate(click_key=F("click__click_id"))
        .first()
    )
    if sale is not None:
        raise InvoiceRecorded(sale)


def conversion_enroll(
    *, conversion: ConversionEvent, campaign_id: int, customer_created: bool = False, held_name: str = ""
) -> LeadResult | None:
    """Enroll the conversion's customer in `campaign_id`, the campaign of its link's post (docs/enrollment.md).

    `customer_created` says the conversion's request created the customer (outcome `created`).
    None when there is nothing to enroll: no customer, or a customer without an email. A suppressed
    customer gives the `suppressed` result and no enrollment. The pixel's enrollments wait for the
    person's confirmation (double opt-in, docs/enrollment.md), with the name it sent held till then.
    """
    if conversion.customer_id is None:
        return None  # no query on the common path of conversions without customer data
    customer = cast(Customer, conversion.customer)  # customer_id is set
    if not customer.email:
        return None
    campaign = Campaign(pk=campaign_id, workspace_id=conversion.workspace_id)  # all enrolling needs of it
    # No savepoint: this runs inside conversion_record's transaction, on the conversions hot path.
    with transaction.atomic(savepoint=False):
        return campaign_enroll(
            campaign=campaign,
            customer=customer,
            created=customer_created,
            channel=conversion.channel,
            conversion_id=conversion.pk,
            pending=conversion.channel == Customer.Channel.PIXEL,
            held_name=held_name,
        )


# One click is one visit of one person: past this many pixel leads on it, the pixel's answer is the
# latest of them and nothing is stored (docs/pixel.md, "POST /api/v1/browser/conversions").
PIXEL_LEADS_PER_CLICK = 3


@transaction.atomic
def pixel_lead_record(
    *, workspace: Workspace, click_id: str, customer: dict[str, str] | None
) -> tuple[ConversionEvent, bool]:
    """A lead from the pixel, unless the click has PIXEL_LEADS_PER_CLICK already: (the event, stored now).

    The click row is locked for the count (FOR NO KEY UPDATE: the event's foreign key still inserts),
    so concurrent calls on one click count one after another.
    """
    click_pk = (
        Click.objects.select_for_update(no_key=True)
        .filter(workspace=workspace, click_id=click_id)
        .values_list("pk", flat=True)
        .first()
    )
    if click_pk is None:
        raise Unprocessable("unknown click_id")
    earlier = list(
        ConversionEvent.objects.filter(click_id=click_pk, channel=Customer.Channel.PIXEL).order_by("-pk")[
            :PIXEL_LEADS_PER_CLICK
        ]
    )
    if len(earlier) >= PIXEL_LEADS_PER_CLICK:
        return earlier[0], False
    event = conversion_record(
        workspace=workspace,
        channel=Customer.Channel.PIXEL,
        event=ConversionEvent.Event.LEAD,
        click_id=click_id,
        customer=customer,
    )
    return event, True


@dataclass(frozen=True)
class Answer:
    status: int
    body: dict[str, Any]
    replayed: bool = False


_TABLE = IdempotencyKey._meta.db_table
# Claims the key for this request. A row older than the TTL is taken over in the same statement
# (its old answer must not replay); a live row is left alone and RETURNING yields nothing. A
# concurrent request's uncommitted claim makes this statement wait until that request commits (then
# its answer is replayed) or rolls back (then this request proceeds): never a double store, never a
# unique-violation 500.
_CLAIMED = ("workspace_id", "key", "is_test", "request_digest", "created_at")
_CLAIM_SQL = f"""INSERT INTO {_TABLE} ({", ".join(_CLAIMED)}, status_code, response_body)
    VALUES ({", ".join(f"%({column})s" for column in _CLAIMED)}, NULL, NULL)
    ON CONFLICT (workspace_id, key, is_test) DO UPDATE SET request_digest = excluded.request_digest,
        status_code = NULL, response_body = NULL, created_at = excluded.created_at
    WHERE {_TABLE}.created_at < %(cutoff)s RETURNING id"""


def request_digest(data: dict[str, Any]) -> str:
    """SHA-256 of the request body as parsed: key order and whitespace do not make a different body."""
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def idempotency_key_check(raw: str | None) -> str | None:
    """The `Idempotency-Key` header's value, None when absent; 422 when unusable."""
    if raw is None:
        return None
    if len(raw) > IDEMPOTENCY_KEY_MAX:
        raise Unprocessable("Idempotency-Key is too long")
    if not raw or not all(" " <= char <= "~" for char in raw):
        raise Unprocessable("Idempotency-Key must be 1 to 255 printable ASCII characters")
    return raw


def idempotent_answer(
    *, workspace: Workspace, key: str | None, digest: str, answer: Callable[[], Answer], test: bool
) -> Answer:
    """`answer()` once per (workspace, key, mode) within the TTL; repeats get the stored answer back. `test`: sent
    with a test token, whose keys never meet a live token's (neither replays the other's answer).

    Only successful answers are kept: `answer()` raising (a 422, a 500) rolls the claim back with
    everything else, so the client can correct the request and retry with the same key.
    """
    if key is None:
        return answer()
    with transaction.atomic():
        now = timezone.now()
        stamp, cutoff = (connection.ops.adapt_datetimefield_value(t) for t in (now, now - IDEMPOTENCY_TTL))
        for _ in range(3):  # a purge can delete a stale row between the two statements; re-claim
            with prepared_cursor() as cursor:
                claim = {"workspace_id": workspace.pk, "key": key, "is_test": test, "request_digest": digest}
                cursor.execute(_CLAIM_SQL, {**claim, "created_at": stamp, "cutoff": cutoff})
                claimed = cursor.fetchone()
            if claimed is not None:
                result = answer()
                IdempotencyKey.objects.filter(pk=claimed.id).update(
                    status_code=result.status, response_body=result.body
                )
                return result
            rows = IdempotencyKey.objects.filter(workspace=workspace, key=key, is_test=test).values_list(
                "request_digest", "status_code", "response_body"
            )
            stored = next(iter(rows), None)  # unique per workspace, key and mode
            if stored is not None:
                if stored[0] != digest:
                    raise Unprocessable("idempotency key reused with a different body")
                # A row seen from here is committed, so answered: in flight (null) only inside its claim's transaction.
                return Answer(status=stored[1], body=stored[2], replayed=True)  # type: ignore[arg-type]
    raise RuntimeError("idempotency key could not be claimed")


def idempotency_keys_purge(*, now: datetime | None = None) -> int:
    """Delete keys past the TTL (they no longer replay anyway); returns how many went."""
    cutoff = (now or timezone.now()) - IDEMPOTENCY_TTL
    deleted, _ = IdempotencyKey.objects.filter(created_at__lt=cutoff).delete()
    return deleted
