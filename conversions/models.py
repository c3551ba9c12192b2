"""ConversionEvent, Refund, CustomerTotals and IdempotencyKey."""

from django.db import models
from django.db.models import F, Q

from customers.models import Customer
from lftrack.currencies import MONEY_MAX


class ConversionEvent(models.Model):
    class Event(models.TextChoices):
        LEAD = "lead"
        SALE = "sale"

    # db_index=False where a composite index below leads with the column: each index is paid on
    # every insert, and at millions of events the redundant ones cost more than they serve.
    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="+", db_index=False)
    click = models.ForeignKey("clicks.Click", on_delete=models.CASCADE, related_name="conversions")
    # Copied from the click when written, so per-link numbers need no join through clicks.
    link = models.ForeignKey("clicks.Link", on_delete=models.CASCADE, related_name="conversions", db_index=False)
    customer = models.ForeignKey(
        Customer, null=True, blank=True, on_delete=models.SET_NULL, related_name="conversions", db_index=False
    )
    event = models.CharField(max_length=4, choices=Event.choices)
    value_cents = models.BigIntegerField(null=True, blank=True)  # sales only
    event_name = models.CharField(max_length=255, blank=True, default="")
    meta = models.JSONField(default=dict, blank=True)
    occurred_at = models.DateTimeField()
    channel = models.CharField(max_length=10, choices=Customer.Channel.choices)
    # A sale's charge or invoice id at the payment provider: one sale per workspace and invoice, forever.
    invoice_id = models.CharField(max_length=255, blank=True, default="", db_default="")
    # ISO 4217: the sale's currency, value_cents in its minor unit; on a lead, the workspace's (unused).
    # Rows from before currencies were all the default, USD (a constant default: no table rewrite).
    currency = models.CharField(max_length=3, default="USD", db_default="USD")
    # Recorded with a test token: kept out of every number, never mailed, never sent to live webhooks.
    is_test = models.BooleanField(default=False, db_default=False)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(event__in=["lead", "sale"]), name="conversions_event_kind_valid"),
            models.CheckConstraint(
                condition=Q(value_cents__isnull=True) | Q(event="sale", value_cents__gte=0),
                name="conversions_event_value_on_sales_only",
            ),
            # NOT VALID on a database that held larger values before (migration 0008; docs/api.md, "Money bounds").
            models.CheckConstraint(condition=Q(value_cents__lte=MONEY_MAX), name="conversions_event_value_bounded"),
            models.CheckConstraint(
                condition=Q(channel__in=["api", "pixel", "manual"]), name="conversions_event_channel_valid"
            ),
            models.CheckConstraint(condition=Q(currency__regex=r"^[A-Z]{3}$"), name="conversions_event_currency_code"),
            # The insert names this index (ON CONFLICT ... WHERE invoice_id <> ''): conversions/services.py. Per
            # mode: a test sale never takes an invoice id from the live sale that will bring it.
            models.UniqueConstraint(
                fields=["workspace", "invoice_id", "is_test"],
                condition=~Q(invoice_id=""),
                name="conversions_event_one_per_invoice_and_mode",
            ),
        ]
        indexes = [
            # Contact page: a customer's conversions, newest first.
            models.Index(fields=["customer", "-occurred_at"], name="conversions_event_customer"),
            # Post and link numbers: a link's events above the roll-up watermark (rollups/); replaced
            # (link, event), which served counting every event of a link.
            models.Index(fields=["link", "id"], name="conversions_event_link_tail"),
            # Workspace activity feed and admin list, newest first.
            models.Index(fields=["workspace", "-occurred_at"], name="conversions_event_recent"),
        ]

    def __str__(self) -> str:
        return f"{self.event} #{self.pk}"


class Refund(models.Model):
    """A refund of part or all of a sale, never more than what is left of it (conversions/refunds.py). Append-only.

    Its sale's link, currency, test flag and time are copied in (none of them ever changes), so the numbers
    roll refunds up like any other rows, with no join: a refund counts on its sale's day, against its link.
    """

    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="+", db_index=False)
    # Not indexed alone: conversions_refund_sale leads with it.
    conversion = models.ForeignKey(ConversionEvent, on_delete=models.CASCADE, related_name="refunds", db_index=False)
    link = models.ForeignKey("clicks.Link", on_delete=models.CASCADE, related_name="+", db_index=False)
    amount_cents = models.BigIntegerField()  # in the sale's currency's minor unit
    currency = models.CharField(max_length=3)
    sale_occurred_at = models.DateTimeField()
    reason = models.CharField(max_length=500, blank=True, default="")
    # The payment provider's refund id: one refund per workspace and id, forever.
    refund_id = models.CharField(max_length=255, blank=True, default="")
    is_test = models.BooleanField(default=False)
    created_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(amount_cents__gt=0), name="conversions_refund_amount_positive"),
            models.CheckConstraint(condition=Q(amount_cents__lte=MONEY_MAX), name="conversions_refund_amount_bounded"),
            models.CheckConstraint(condition=Q(currency__regex=r"^[A-Z]{3}$"), name="conversions_refund_currency_code"),
            # The insert names this index (ON CONFLICT ... WHERE refund_id <> ''): conversions/refunds.py. Per mode.
            models.UniqueConstraint(
                fields=["workspace", "refund_id", "is_test"],
                condition=~Q(refund_id=""),
                name="conversions_refund_one_per_refund_id_and_mode",
            ),
        ]
        indexes = [
            # What is left of a sale: the sum of its refunds.
            models.Index(fields=["conversion", "id"], name="conversions_refund_sale"),
            # Link numbers: a link's refunds above the roll-up watermark (rollups/).
            models.Index(fields=["link", "id"], name="conversions_refund_link_tail"),
            # The workspace's refunds, newest first.
            models.Index(fields=["workspace", "-created_at"], name="conversions_refund_recent"),
        ]

    def __str__(self) -> str:
        return f"refund #{self.pk} of sale #{self.conversion_id}"


class CustomerTotals(models.Model):
    """A contact's lifetime numbers, kept exact by database triggers in the statement that writes each conversion
    and refund (migration 0011): the contacts list sorts by them and the customers API shows them, never summing
    a contact's events per row. `currency` '' is the row of leads and of sales in every currency; a sale's
    currency keys its row of sales, revenue and refunds, so no sum mixes currencies (docs/api.md,
    "GET /api/v1/customers and GET /api/v1/customers/{id}"). A test contact's rows count its test-mode events, a
    live contact's its live ones (the modes never share a contact). Rows stay when retention purges what they
    counted, as the roll-ups do; erasure deletes them (conversions/erasure.py)."""

    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="+", db_index=False)
    # Not indexed alone: conversions_customertotals_one_per_currency leads with it.
    customer = models.ForeignKey(Customer, on_delete=models.CASCADE, related_name="totals", db_index=False)
    currency = models.CharField(max_length=3, blank=True)
    leads = models.BigIntegerField(db_default=0)
    sales = models.BigIntegerField(db_default=0)
    # Sums saturate at the bigint maximum (1,024 sales of the largest amount): only abuse gets there, and a
    # conversion never fails for its contact's total.
    revenue_cents = models.BigIntegerField(db_default=0)  # gross, in the currency's minor unit
    refunded_cents = models.BigIntegerField(db_default=0)
    net_cents = models.GeneratedField(
        expression=F("revenue_cents") - F("refunded_cents"), output_field=models.BigIntegerField(), db_persist=True
    )

    class Meta:
        verbose_name = verbose_name_plural = "contact totals"
        constraints = [
            # The triggers' upserts name it (ON CONFLICT (customer_id, currency)); it serves the contacts list's join.
            models.UniqueConstraint(
                fields=["customer", "currency"], name="conversions_customertotals_one_per_currency"
            ),
            models.CheckConstraint(
                condition=Q(currency="") | Q(currency__regex=r"^[A-Z]{3}$"), name="conversions_customertotals_currency"
            ),
        ]

    def __str__(self) -> str:
        return f"totals of contact #{self.customer_id} in {self.currency or 'counts'}"


class IdempotencyKey(models.Model):
    """The first answer to a request sent with `Idempotency-Key`, replayed for 24 hours to the same mode (live, test)."""

    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=255)
    request_digest = models.CharField(max_length=64)  # SHA-256 of the request body
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)  # null while in flight
    response_body = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField()
    # Sent with a test token: a key names one request per mode, as an invoice_id and a refund_id do.
    is_test = models.BooleanField(default=False, db_default=False)

    class Meta:
        constraints = [
            # The claim names it (ON CONFLICT): conversions/services.py.
            models.UniqueConstraint(
                fields=["workspace", "key", "is_test"], name="conversions_idempotencykey_one_per_key_and_mode"
            ),
        ]
        indexes = [models.Index(fields=["created_at"], name="conversions_idemkey_age")]
