"""Customer and CustomerActivity."""

from django.db import models
from django.db.models import Q
from django.db.models.functions import Lower


class Customer(models.Model):
    class Channel(models.TextChoices):
        API = "api", "API"
        PIXEL = "pixel", "Pixel"
        MANUAL = "manual", "Manual"

    # Not indexed alone: customers_customer_recent leads with it.
    workspace = models.ForeignKey(
        "workspaces.Workspace", on_delete=models.CASCADE, related_name="customers", db_index=False
    )
    # Stored as first given; identity is lower(email). Empty means "no email yet".
    email = models.CharField(max_length=254, blank=True, default="")
    name = models.CharField(max_length=200, blank=True, default="")
    avatar_url = models.CharField(max_length=2048, blank=True, default="")
    external_id = models.CharField(max_length=255, blank=True, default="")
    source = models.CharField(max_length=10, choices=Channel.choices)
    # Created by a test token (lf_test_...): a person of the workspace's test identity space, which the unique
    # indexes keep apart from the live one, so test traffic never merges into, moves the external_id of, or
    # suppresses a live contact (docs/matching.md, "Test mode").
    is_test = models.BooleanField(default=False, db_default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    # Set when the person was erased (customers/erasure.py): the row stays, emptied, so that what is counted
    # against it (enrollments, campaign leads, sends) stays counted; nothing reads it as a person again, and the
    # database refuses to write into it (docs/privacy.md, "Erasing a person").
    erased_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "contact"
        constraints = [
            # The matching service's INSERT ... ON CONFLICT names this index's expression and predicate.
            # One person per address and per external_id in each mode (live, test).
            models.UniqueConstraint(
                Lower("email"),
                "workspace",
                "is_test",
                condition=~Q(email=""),
                name="customers_customer_one_per_email_and_mode",
            ),
            models.UniqueConstraint(
                fields=["workspace", "external_id", "is_test"],
                condition=~Q(external_id=""),
                name="customers_customer_one_holder_per_external_id_and_mode",
            ),
            models.CheckConstraint(
                condition=Q(source__in=["api", "pixel", "manual"]), name="customers_customer_source_valid"
            ),
        ]
        indexes = [models.Index(fields=["workspace", "-created_at"], name="customers_customer_recent")]

    def __str__(self) -> str:
        if self.erased_at is not None:
            return f"erased contact #{self.pk}"
        return self.email or f"external_id {self.external_id}"


class CustomerActivity(models.Model):
    """The identity timeline of a contact: creation, email arrival, external_id moves, suppression."""

    class Kind(models.TextChoices):
        CREATED = "created"
        EMAIL_ADDED = "email_added"
        EXTERNAL_ID_MOVED_IN = "external_id_moved_in"
        EXTERNAL_ID_MOVED_OUT = "external_id_moved_out"
        SUPPRESSED = "suppressed"

    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="+")
    # Not indexed alone: customers_activity_timeline leads with it.
    customer = models.ForeignKey(Customer, on_delete=models.CASCADE, related_name="activities", db_index=False)
    kind = models.CharField(max_length=32, choices=Kind.choices)
    # How the change came in: a customer's channels, "email" for a link in an email we sent, "provider"
    # for an email provider's webhook.
    channel = models.CharField(
        max_length=10,
        choices=[
            *Customer.Channel.choices,
            ("email", "Email link"),
            ("smtp", "Mail server"),
            ("provider", "Email provider"),
        ],
    )
    external_id = models.CharField(max_length=255, blank=True, default="")
    # For a move: the customer the external_id came from (moved_in) or went to (moved_out).
    other_customer = models.ForeignKey(Customer, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    detail = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "customer activities"
        indexes = [models.Index(fields=["customer", "created_at"], name="customers_activity_timeline")]

    def __str__(self) -> str:
        return f"{self.kind} ({self.channel})"


class ContactTag(models.Model):
    """A label on a contact (many per contact), written lower-cased: "VIP" and "vip" are one tag
    (customers/tags.py; segments select contacts by it, campaigns/segments.py)."""

    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="+", db_index=False)
    # Not indexed alone: the unique (customer, name) leads with it.
    customer = models.ForeignKey(Customer, on_delete=models.CASCADE, related_name="tags", db_index=False)
    name = models.CharField(max_length=50)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["customer", "name"], name="customers_contacttag_one_per_name"),
            models.CheckConstraint(
                condition=Q(name=Lower("name")) & ~Q(name=""), name="customers_contacttag_name_lower"
            ),
        ]
        indexes = [
            # A segment's "tagged X": the workspace's contacts with that tag, and the tag list of the back office.
            models.Index(fields=["workspace", "name", "customer"], name="customers_contacttag_by_name"),
        ]

    def __str__(self) -> str:
        return self.name
