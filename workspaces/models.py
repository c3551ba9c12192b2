"""Workspace (the tenant), Membership, ApiToken and Invitation."""

import secrets

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.db.models.functions import Lower

RETENTION_MAX_DAYS = 36500  # a hundred years: past it, "keep forever" (null) is meant


def new_tracking_key() -> str:
    return "pk_" + secrets.token_urlsafe(18)


class Workspace(models.Model):
    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=100, unique=True)
    # Public: pasted into customers' pages with the pixel; it only ever records leads.
    tracking_key = models.CharField(max_length=64, unique=True, default=new_tracking_key)
    # Origins allowed to call the browser endpoint (CORS), one per line, e.g. https://shop.example.
    allowed_origins = models.TextField(blank=True, default="")
    # Emails this workspace may send per UTC day; null means settings.DEFAULT_DAILY_SEND_LIMIT.
    daily_send_limit = models.PositiveIntegerField(null=True, blank=True)
    # ISO 4217: the currency of a sale that names none (lftrack/currencies.py).
    currency = models.CharField(max_length=3, default="USD", db_default="USD")
    # The HTML emails' layout (templates/emails/layout.html): a logo, a colour for links and buttons, and the
    # postal address the footer must show (CAN-SPAM).
    email_logo_url = models.URLField(max_length=2048, blank=True, default="", db_default="")
    email_brand_color = models.CharField(max_length=7, default="#2563eb", db_default="#2563eb")
    postal_address = models.TextField(max_length=500, blank=True, default="", db_default="")
    # Where a deleted link (and an expired one without a fallback of its own) sends visitors; empty: a 404.
    link_fallback_url = models.URLField(max_length=2048, blank=True, default="", db_default="")
    # Clicks and conversions older than this many days are purged, their numbers kept in the roll-ups
    # (rollups/retention.py; docs/privacy.md, "Retention"); null keeps them forever.
    retention_days = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(currency__regex=r"^[A-Z]{3}$"), name="workspaces_workspace_currency_code"
            ),
            # Printed into a style attribute of the layout: a colour and nothing else.
            models.CheckConstraint(
                condition=Q(email_brand_color__regex=r"^#[0-9a-fA-F]{6}$"), name="workspaces_workspace_brand_color"
            ),
            models.CheckConstraint(
                condition=Q(email_logo_url="") | Q(email_logo_url__startswith="https://"),
                name="workspaces_workspace_logo_https",
            ),
            models.CheckConstraint(
                condition=Q(retention_days__isnull=True)
                | Q(retention_days__gte=1, retention_days__lte=RETENTION_MAX_DAYS),
                name="workspaces_workspace_retention_bounded",
            ),
        ]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    class Role(models.TextChoices):
        OWNER = "owner"
        EDITOR = "editor"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.EDITOR)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "workspace"], name="workspaces_membership_one_per_user"),
            models.CheckConstraint(condition=Q(role__in=["owner", "editor"]), name="workspaces_membership_role_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.user} ({self.role}) in {self.workspace}"


class ApiToken(models.Model):
    """A workspace's API credential. The secret is shown once; only its SHA-256 digest is kept."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100)
    # First 8 random characters after `lf_` (`lf_test_`): found by index, shown in the admin to tell tokens apart.
    prefix = models.CharField(max_length=8, db_index=True)
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    # What the token may do, space-separated (Scope below); empty: everything, as every token before scopes.
    scopes = models.CharField(max_length=200, blank=True, default="", db_default="")
    # A test token (lf_test_...): what it records is test data, kept out of every number and every email.
    is_test = models.BooleanField(default=False, db_default=False)

    class Scope(models.TextChoices):
        CONVERSIONS_WRITE = "conversions:write", "record conversions"
        LEADS_WRITE = "leads:write", "enroll campaign leads"
        EMAIL_EVENTS_WRITE = "email_events:write", "report bounces and complaints"
        READ = "read", "read back (the read API)"
        WEBHOOKS = "webhooks", "manage webhook endpoints"
        LINKS_READ = "links:read", "read links"
        LINKS_WRITE = "links:write", "make, change and delete links"
        CUSTOMERS_READ = "customers:read", "export everything known of a contact"
        CUSTOMERS_WRITE = "customers:write", "erase contacts"

    def __str__(self) -> str:
        return f"{self.name} ({self.shown})"

    @property
    def shown(self) -> str:
        """How the token starts, to tell tokens apart: `lf_AbCd1234…`, `lf_test_AbCd1234…`."""
        return f"lf_{'test_' if self.is_test else ''}{self.prefix}…"

    def allows(self, scope: str) -> bool:
        return not self.scopes or scope in self.scopes.split()

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


class Invitation(models.Model):
    """An owner's invitation of an email address to a workspace: a membership once its person accepts.

    At most one pending invitation per workspace and address (lower-cased): inviting again resends it.
    """

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="invitations")
    email = models.EmailField(max_length=254)
    role = models.CharField(max_length=10, choices=Membership.Role.choices, default=Membership.Role.EDITOR)
    invited_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    accepted_at = models.DateTimeField(null=True, blank=True)
    cancelled_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                Lower("email"),
                "workspace",
                condition=Q(accepted_at__isnull=True, cancelled_at__isnull=True),
                name="workspaces_invitation_one_pending",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.email} to {self.workspace}"
