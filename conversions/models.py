"""ConversionEvent and IdempotencyKey."""
from django.db import models
from django.db.models import Q

from customers.models import Customer


class ConversionEvent(models.Model):
    class Event(models.TextChoices):
        LEAD = "lead"
        SALE = "sale"

    # db_index=False where a composite index below leads with the column: each index is paid on
    # every insert, and at millions of events the redundant ones cost more than they serve.
    workspace = models.ForeignKey(
        "workspaces.Workspace", on_delete=models.CASCADE, related_name="+", db_index=False
    )
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

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(event__in=["lead", "sale"]), name="conversions_event_kind_valid"),
            models.CheckConstraint(
                condition=Q(value_cents__isnull=True) | Q(event="sale", value_cents__gte=0),
                name="conversions_event_value_on_sales_only",
            ),
            models.CheckConstraint(
                condition=Q(channel__in=["api", "pixel", "manual"]), name="conversions_event_channel_valid"
            ),
            # The insert names this index (ON CONFLICT ... WHERE invoice_id <> ''): conversions/services.py.
            models.UniqueConstraint(
                fields=["workspace", "invoice_id"], condition=~Q(invoice_id=""), name="conversions_event_one_per_invoice"
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


class IdempotencyKey(models.Model):
    """The first answer to a request sent with `Idempotency-Key`, replayed for 24 hours."""

    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=255)
    request_digest = models.CharField(max_length=64)  # SHA-256 of the request body
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)  # null while in flight
    response_body = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["workspace", "key"], name="conversions_idempotencykey_one_per_key"),
        ]
        indexes = [models.Index(fields=["created_at"], name="conversions_idemkey_age")]
