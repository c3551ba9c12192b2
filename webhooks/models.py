"""Endpoint, Event (the outbox), Delivery (an event owed to an endpoint) and Attempt (the delivery log)."""

from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.functions import RandomUUID
from django.db import models
from django.db.models import Q


class Endpoint(models.Model):
    """Where a workspace wants its events: an https URL, the types it wants, a signing secret."""

    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="+", db_index=False)
    url = models.CharField(max_length=2048)
    description = models.CharField(max_length=200, blank=True, default="")
    event_types = ArrayField(models.CharField(max_length=40))
    enabled = models.BooleanField(default=True)
    # Test-mode endpoints get test events only, live ones live events only (docs/webhooks.md, "Test mode").
    test = models.BooleanField(default=False)
    # The signing secret (whsec_...) encrypted with a key derived from SECRET_KEY (webhooks/secrets.py):
    # signing needs the secret itself, so it cannot be stored hashed.
    secret = models.TextField()
    # After a rotation the old secret also signs until previous_secret_expires_at (receivers switch over).
    previous_secret = models.TextField(blank=True, default="")
    previous_secret_expires_at = models.DateTimeField(null=True, blank=True)
    # The current streak of failed attempts; 20 in a row, or failing for 3 days, disables the endpoint.
    failures_in_row = models.PositiveIntegerField(default=0)
    failing_since = models.DateTimeField(null=True, blank=True)
    disabled_at = models.DateTimeField(null=True, blank=True)
    disabled_reason = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [
            # event_emit's EXISTS: the workspace's enabled endpoints (a handful at most).
            models.Index(fields=["workspace"], condition=Q(enabled=True), name="webhooks_endpoint_enabled"),
        ]

    def __str__(self) -> str:
        return self.url


class Event(models.Model):
    """One change reported to endpoints, written in the change's own transaction (the outbox).

    Written only when an enabled endpoint of the workspace wants its type. `subject_id` is the
    object's id in the table its kind names (webhooks/events.py); `customer_id` orders deliveries per
    customer. Both are plain ids: the apps that own them sit above this one.
    """

    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="+", db_index=False)
    uid = models.UUIDField(db_default=RandomUUID(), editable=False, unique=True)
    type = models.CharField(max_length=40)
    test = models.BooleanField(default=False)
    subject_id = models.BigIntegerField()
    customer_id = models.BigIntegerField(null=True, blank=True)
    detail = models.JSONField(default=dict, blank=True)
    # The object as the read API showed it right after the change committed (built at dispatch), kept
    # so that every attempt and replay sends the same body.
    data = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField()
    # Set once its deliveries exist and their jobs are queued (webhooks/outbox.py).
    dispatched_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["workspace", "-id"], name="webhooks_event_recent"),
            # Events committed but not dispatched, per workspace: a workspace's dispatch job takes its own in
            # order without reading past another's backlog; the sweeper finds the workspaces with old ones.
            models.Index(
                fields=["workspace", "id"], condition=Q(dispatched_at__isnull=True), name="webhooks_event_undispatched"
            ),
            models.Index(fields=["created_at"], name="webhooks_event_age"),
        ]

    def __str__(self) -> str:
        return f"{self.type} {self.public_id}"

    @property
    def public_id(self) -> str:
        return f"evt_{self.uid.hex}"


class Delivery(models.Model):
    """An event owed to one endpoint: pending until a 2xx, failed for good on a final answer or after 3 days."""

    class State(models.TextChoices):
        PENDING = "pending"
        DELIVERED = "delivered"
        FAILED = "failed"

    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="+", db_index=False)
    event = models.ForeignKey(Event, on_delete=models.CASCADE, related_name="deliveries", db_index=False)
    endpoint = models.ForeignKey(Endpoint, on_delete=models.CASCADE, related_name="deliveries", db_index=False)
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    # The retry window counts from here: first queued, or replayed.
    queued_at = models.DateTimeField()
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name_plural = "deliveries"
        constraints = [
            models.UniqueConstraint(fields=["event", "endpoint"], name="webhooks_delivery_one_per_endpoint"),
            models.CheckConstraint(
                condition=Q(state__in=["pending", "delivered", "failed"]), name="webhooks_delivery_state_valid"
            ),
        ]
        indexes = [
            models.Index(fields=["endpoint", "state"], name="webhooks_delivery_by_endpoint"),
        ]

    def __str__(self) -> str:
        return f"{self.event} to {self.endpoint}"


class Attempt(models.Model):
    """One POST of a delivery: the delivery log of the back office."""

    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="+", db_index=False)
    delivery = models.ForeignKey(Delivery, on_delete=models.CASCADE, related_name="attempt_log")
    endpoint = models.ForeignKey(Endpoint, on_delete=models.CASCADE, related_name="+", db_index=False)
    number = models.PositiveIntegerField()
    started_at = models.DateTimeField()
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)  # null: no answer (network, timeout)
    duration_ms = models.PositiveIntegerField()
    response_excerpt = models.CharField(max_length=1000, blank=True, default="")
    error = models.CharField(max_length=300, blank=True, default="")
    ok = models.BooleanField(default=False)

    class Meta:
        indexes = [models.Index(fields=["endpoint", "-id"], name="webhooks_attempt_log")]

    def __str__(self) -> str:
        return f"attempt {self.number} of {self.delivery_id}"
