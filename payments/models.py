"""Connection (a provider's webhooks into a workspace), Delivery (the connection's log) and Reference."""

import secrets

from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.db import models
from django.db.models import Q


def _url_token() -> str:
    return secrets.token_urlsafe(24)  # 192 bits: the endpoint's address cannot be guessed


class Connection(models.Model):
    """A provider's webhooks into one workspace, at an address of its own, verified with the provider's secret."""

    class Provider(models.TextChoices):
        STRIPE = "stripe", "Stripe"
        SHOPIFY = "shopify", "Shopify"

    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="+", db_index=False)
    provider = models.CharField(max_length=10, choices=Provider.choices)
    name = models.CharField(max_length=200, blank=True, default="")
    # The last part of the endpoint's URL (/hooks/payments/<token>): it routes, the signature authenticates.
    url_token = models.CharField(max_length=64, unique=True, default=_url_token, editable=False)
    # The provider's signing secret, encrypted like webhook secrets (webhooks/secrets.py): verifying needs the
    # secret itself. Empty until the owner pastes it (Stripe shows it only once the URL is registered).
    secret = models.TextField(blank=True, default="")
    # After a rotation the old secret still verifies until previous_secret_expires_at (the provider's own roll).
    previous_secret = models.TextField(blank=True, default="")
    previous_secret_expires_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # Disconnected by timestamp, never deleted: its log and references stay readable.
    disconnected_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(provider__in=["stripe", "shopify"]), name="payments_connection_provider_valid"
            ),
        ]
        indexes = [models.Index(fields=["workspace", "-created_at"], name="payments_connection_recent")]

    def __str__(self) -> str:
        return f"{self.get_provider_display()} #{self.pk}" + (f" ({self.name})" if self.name else "")


class Delivery(models.Model):
    """One event the provider delivered, verified or not, and what became of it: the connection's log."""

    class Outcome(models.TextChoices):
        SALE = "sale", "sale recorded"
        REFUND = "refund", "refund recorded"
        REMEMBERED = "remembered", "click remembered"
        DUPLICATE = "duplicate", "duplicate"
        NOT_ATTRIBUTED = "not_attributed", "not attributed"
        WAITING = "waiting", "waiting for its sale"
        IGNORED = "ignored", "ignored"
        REJECTED = "rejected", "rejected"

    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="+", db_index=False)
    connection = models.ForeignKey(Connection, on_delete=models.CASCADE, related_name="deliveries", db_index=False)
    # The provider's id of the event (Stripe's evt_..., Shopify's X-Shopify-Webhook-Id); empty when unverified.
    event_id = models.CharField(max_length=255, blank=True, default="")
    event_type = models.CharField(max_length=100, blank=True, default="")
    is_test = models.BooleanField(default=False)
    outcome = models.CharField(max_length=20, choices=Outcome.choices)
    reason = models.CharField(max_length=300, blank=True, default="")
    conversion = models.ForeignKey(
        "conversions.ConversionEvent", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    refund = models.ForeignKey("conversions.Refund", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    # The verified body as received, for a replay; empty for a rejected one (nothing in it can be trusted).
    body = models.TextField(blank=True, default="")
    # The provider's ids (a charge, an invoice, a subscription) whose arrival replays this event: a refund before
    # its sale, a renewal before its checkout (payments/services.py).
    waiting_for = ArrayField(models.CharField(max_length=255), default=list, blank=True)
    received_at = models.DateTimeField()
    repeats = models.PositiveIntegerField(default=0)  # deliveries of the same event after the first
    # Not a column: delivery_receive's answer sets it, True when the provider sent this event before.
    repeated: bool

    class Meta:
        verbose_name_plural = "deliveries"
        constraints = [
            # Deliveries of one event, however many and however concurrent, are one row (payments/services.py).
            models.UniqueConstraint(
                fields=["connection", "event_id"], condition=~Q(event_id=""), name="payments_delivery_one_per_event"
            ),
            models.CheckConstraint(
                condition=Q(
                    outcome__in=[
                        "sale",
                        "refund",
                        "remembered",
                        "duplicate",
                        "not_attributed",
                        "waiting",
                        "ignored",
                        "rejected",
                    ]
                ),
                name="payments_delivery_outcome_valid",
            ),
        ]
        indexes = [
            # The log of a connection, newest first.
            models.Index(fields=["connection", "-id"], name="payments_delivery_log"),
            # The events waiting for an id that has just arrived (GIN: the array's overlap, &&).
            GinIndex(fields=["waiting_for"], name="payments_delivery_waiting", condition=~Q(waiting_for=[])),
            models.Index(fields=["received_at"], name="payments_delivery_age"),
        ]

    def __str__(self) -> str:
        return f"{self.event_type or 'delivery'} {self.event_id}".strip()


class Reference(models.Model):
    """What one of the provider's ids stands for in the workspace: a customer or a subscription (the contact and
    the click they came by, so renewals need nothing from the integrator), a payment (the sale it paid for)."""

    class Kind(models.TextChoices):
        CUSTOMER = "customer"
        SUBSCRIPTION = "subscription"
        PAYMENT = "payment"

    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="+", db_index=False)
    provider = models.CharField(max_length=10, choices=Connection.Provider.choices)
    is_test = models.BooleanField(default=False)
    kind = models.CharField(max_length=12, choices=Kind.choices)
    ref = models.CharField(max_length=255)
    click = models.ForeignKey("clicks.Click", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    customer = models.ForeignKey(
        "customers.Customer", null=True, blank=True, on_delete=models.SET_NULL, related_name="provider_references"
    )
    # A payment's sale; null for a payment seen but not attributed (its refunds are not attributed either).
    conversion = models.ForeignKey(
        "conversions.ConversionEvent", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["workspace", "provider", "is_test", "kind", "ref"], name="payments_reference_one_per_id"
            ),
            models.CheckConstraint(
                condition=Q(kind__in=["customer", "subscription", "payment"]), name="payments_reference_kind_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.provider} {self.kind} {self.ref}"
