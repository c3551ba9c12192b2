"""Post, Link and Click."""

import secrets

from django.db import models


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


class Link(models.Model):
    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="links")
    post = models.ForeignKey(Post, on_delete=models.CASCADE, related_name="links")
    key = models.CharField(max_length=32, unique=True, default=new_link_key)
    destination = models.URLField(max_length=2048)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"/l/{self.key}"


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

    class Meta:
        constraints = [models.UniqueConstraint(fields=["click_id"], name="clicks_click_one_per_click_id")]
        # Admin numbers: a link's clicks above the roll-up watermark (rollups/). Replaces the link_id
        # index one for one, so a click still updates three indexes.
        indexes = [
            models.Index(fields=["link", "id"], name="clicks_click_link_tail"),
            # Retention's purge: a workspace's oldest clicks, in id order (rollups/retention.py); replaced the
            # workspace_id index one for one.
            models.Index(fields=["workspace", "id"], name="clicks_click_workspace_tail"),
        ]

    def __str__(self) -> str:
        return self.click_id
