"""Post, Link (its tags and its history of changes) and Click."""

import secrets

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.db.models.functions import Lower, Now

# A chosen key (docs/api.md, "Link keys"): what a random key is made of, case-sensitive, 1 to 64 characters.
KEY_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
UTM_FIELDS = ("utm_source", "utm_medium", "utm_campaign", "utm_term", "utm_content")


def new_link_key() -> str:
    return secrets.token_urlsafe(6)  # 8 URL-safe characters, 48 bits


def new_click_id() -> str:
    return secrets.token_urlsafe(16)  # 22 URL-safe characters, 128 bits: unguessable, never sequential


class Post(models.Model):
    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="posts")
    title = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["workspace", "title"], name="clicks_post_title")]

    def __str__(self) -> str:
        return self.title


class Tag(models.Model):
    """A workspace's label for links, to filter them by; a name once per workspace, whatever its letter case."""

    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="+")
    name = models.CharField(max_length=50)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(Lower("name"), "workspace", name="clicks_tag_one_per_name"),
            models.CheckConstraint(condition=~Q(name=""), name="clicks_tag_name_not_empty"),
        ]

    def __str__(self) -> str:
        return self.name


class Link(models.Model):
    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="links")
    post = models.ForeignKey(Post, on_delete=models.CASCADE, related_name="links")
    # Unique across workspaces: every link is /l/<key> on the one domain (docs/api.md, "Link keys").
    key = models.CharField(max_length=64, unique=True, default=new_link_key)
    # What the redirect sends visitors to: the address as given with the UTM fields composed in (clicks/links.py).
    destination = models.URLField(max_length=2048)
    # The UTM parameters of `destination`, kept apart to filter and edit by; always what the destination carries.
    utm_source = models.CharField(max_length=200, blank=True, default="", db_default="")
    utm_medium = models.CharField(max_length=200, blank=True, default="", db_default="")
    utm_campaign = models.CharField(max_length=200, blank=True, default="", db_default="")
    utm_term = models.CharField(max_length=200, blank=True, default="", db_default="")
    utm_content = models.CharField(max_length=200, blank=True, default="", db_default="")
    tags = models.ManyToManyField(Tag, blank=True, related_name="links")
    # From then on the redirect sends visitors to `fallback_url` (or the workspace's, or a 404) and records no click.
    expires_at = models.DateTimeField(null=True, blank=True)
    fallback_url = models.URLField(max_length=2048, blank=True, default="", db_default="")
    # Archived: out of lists and pickers, still redirecting. Deleted: no longer redirecting; its clicks and
    # conversions stay in the numbers. Never a row deleted: clicks and conversions point at it.
    archived_at = models.DateTimeField(null=True, blank=True)
    deleted_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # db_default: the code a rolling deploy still runs inserts links without it (docs/deployment.md).
    updated_at = models.DateTimeField(auto_now=True, db_default=Now())

    class Meta:
        constraints = [models.CheckConstraint(condition=Q(key__regex=KEY_PATTERN), name="clicks_link_key_chars")]
        # The API's list, newest first, a page at a time (rollups/links_api.py).
        indexes = [models.Index(fields=["workspace", "-created_at", "-id"], name="clicks_link_recent")]

    def __str__(self) -> str:
        return f"/l/{self.key}"


class LinkChange(models.Model):
    """One change of a link: who made it (a person in the back office or an API token), when, before and after."""

    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="+")
    link = models.ForeignKey(Link, on_delete=models.CASCADE, related_name="changes", db_index=False)
    changed_at = models.DateTimeField()
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    token = models.ForeignKey("workspaces.ApiToken", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    # The changed fields only, as {field: value}: "tags" a sorted list of names, times ISO 8601.
    before = models.JSONField()
    after = models.JSONField()

    class Meta:
        # A link's history, newest first, on its page.
        indexes = [models.Index(fields=["link", "-changed_at"], name="clicks_linkchange_history")]

    def __str__(self) -> str:
        return f"change of link #{self.link_id} at {self.changed_at:%Y-%m-%d %H:%M}"


class Click(models.Model):
    # Not indexed alone: clicks_click_workspace_tail leads with it.
    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="+", db_index=False)
    # Not indexed alone: clicks_click_link_tail leads with it.
    link = models.ForeignKey(Link, on_delete=models.CASCADE, related_name="clicks", db_index=False)
    # Unique through a constraint, not unique=True: on PostgreSQL that also builds a LIKE index
    # (varchar_pattern_ops) which no query uses and every click would pay for.
    click_id = models.CharField(max_length=64, default=new_click_id)
    created_at = models.DateTimeField(auto_now_add=True)
    user_agent = models.CharField(max_length=512, blank=True, default="")
    referrer = models.CharField(max_length=2048, blank=True, default="")
    # A crawler, a link-preview fetcher or a prefetch (clicks/bots.py): redirected as anyone, but
    # left out of the click numbers.
    is_bot = models.BooleanField(default=False, db_default=False)
    # Computed from the user agent and the referrer as the click is recorded (clicks/agents.py).
    device = models.CharField(max_length=10, blank=True, default="", db_default="")
    browser = models.CharField(max_length=50, blank=True, default="", db_default="")
    os = models.CharField(max_length=50, blank=True, default="", db_default="")
    referrer_domain = models.CharField(max_length=255, blank=True, default="", db_default="")
    # The visitor's country (ISO 3166 alpha-2) from its address, '' where unknown (null in the API); its city when
    # the operator supplies a city database, else '' (clicks/geo.py). Both read as the click is recorded.
    country = models.CharField(max_length=2, blank=True, default="", db_default="")
    city = models.CharField(max_length=200, blank=True, default="", db_default="")
    # The link's UTM fields as the click found them (a later change of the link leaves them): its breakdowns,
    # and its conversions' through it.
    utm_source = models.CharField(max_length=200, blank=True, default="", db_default="")
    utm_medium = models.CharField(max_length=200, blank=True, default="", db_default="")
    utm_campaign = models.CharField(max_length=200, blank=True, default="", db_default="")
    # A click on a campaign email's link whose signed token checked out: the EmailSend (so the enrollment, step
    # and contact) it came from. A plain id: campaigns sit above clicks (docs/email.md, "Tracked links").
    email_send_id = models.BigIntegerField(null=True, blank=True)
    # The same for a broadcast's link: the BroadcastRecipient (so the broadcast and contact) it came from.
    broadcast_recipient_id = models.BigIntegerField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["click_id"], name="clicks_click_one_per_click_id")]
        # Admin numbers: a link's clicks above the roll-up watermark (rollups/). Replaces the link_id
        # index one for one, so a click still updates three indexes.
        indexes = [
            models.Index(fields=["link", "id"], name="clicks_click_link_tail"),
            # A step's and a contact's email clicks; partial, so the clicks of other links never update it.
            models.Index(
                fields=["email_send_id"],
                condition=models.Q(email_send_id__isnull=False),
                name="clicks_click_email_send",
            ),
            models.Index(
                fields=["broadcast_recipient_id"],
                condition=models.Q(broadcast_recipient_id__isnull=False),
                name="clicks_click_bc_recipient",
            ),
            # Retention's purge: a workspace's oldest clicks, in id order (rollups/retention.py); replaced the
            # workspace_id index one for one.
            models.Index(fields=["workspace", "id"], name="clicks_click_workspace_tail"),
        ]

    def __str__(self) -> str:
        return self.click_id
