"""Tracked links in campaign emails and broadcasts: one Link per step (or broadcast) and destination, each recipient's click signed to them."""

import hashlib
from urllib.parse import quote

from django.conf import settings
from django.db import transaction
from django.db.models.functions import MD5
from django.utils import timezone

from campaigns.html import html_links, html_links_replace, text_links, text_links_replace
from campaigns.models import Broadcast, BroadcastLink, CampaignEmail, EmailLink
from clicks.links import link_add
from clicks.models import Post
from clicks.recipients import RECIPIENT_PARAM, broadcast_recipient_token, recipient_token
from lftrack.errors import Unprocessable


def email_links_ensure(step: CampaignEmail) -> dict[str, str]:
    """{destination: link key} for every http(s) link in the step's HTML and text parts, created when missing
    (under the step's row lock, so two senders make one link each). Our own unsubscribe and confirmation
    links are never in a step's text: the layout and the footer add them after the rewrite."""
    destinations = list(dict.fromkeys([*html_links(step.html), *text_links(step.body)]))
    destinations = [url for url in destinations if len(url) <= 2048 and not _ours(url)]
    if not destinations:
        return {}
    known = _known(step, destinations)
    if len(known) < len(destinations):
        with transaction.atomic():
            CampaignEmail.objects.select_for_update().filter(pk=step.pk).first()
            known = _known(step, destinations)
            post = _post(step)
            for destination in destinations:
                if destination not in known:
                    known[destination] = _create(step, post, destination)
    return known


# Our own unsubscribe (/u/), confirmation (/c/) and tracked (/l/) links, written into a step by hand: never
# wrapped (an unsubscribe must work as it is; a tracked link wrapped again would count each click twice).
_OURS = ("/u/", "/c/", "/l/")


def _ours(url: str) -> bool:
    base = settings.PUBLIC_BASE_URL.rstrip("/")
    return any(url.startswith(base + path) for path in _OURS)


def _known(step: CampaignEmail | Broadcast, destinations: list[str]) -> dict[str, str]:
    digests = [hashlib.md5(url.encode(), usedforsecurity=False).hexdigest() for url in destinations]
    links = (
        EmailLink.objects.filter(campaign_email=step)
        if isinstance(step, CampaignEmail)
        else BroadcastLink.objects.filter(broadcast=step)
    )
    rows = (
        links.annotate(digest=MD5("destination"))  # the unique index's expression, so it serves this
        .filter(digest__in=digests)
        .values_list("destination", "link__key", "link__deleted_at", "link__expires_at")
    )
    now = timezone.now()
    # A step's link deleted or expired in the back office or the API (clicks/links.py) is not sent again: its
    # destination goes out as written, untracked, rather than as a link that no longer redirects there.
    return {
        destination: "" if deleted or (expires and expires <= now) else key
        for destination, key, deleted, expires in rows
        if destination in destinations
    }


def _post(step: CampaignEmail) -> Post:
    """The step's post: every link of one email in one post, named after it, so its numbers read as one."""
    first = EmailLink.objects.filter(campaign_email=step).select_related("link__post").order_by("pk").first()
    if first is not None:
        return first.link.post
    title = f"Email: {step.campaign.name} #{step.position}"[:200]
    return Post.objects.create(workspace_id=step.workspace_id, title=title)


def _create(step: CampaignEmail, post: Post, destination: str) -> str:
    try:
        with transaction.atomic():
            link = link_add(workspace=post.workspace, destination=destination, post=post)
            EmailLink.objects.create(
                workspace_id=step.workspace_id, campaign_email=step, link=link, destination=destination
            )
            return link.key
    except Unprocessable:  # a URL link_add refuses: left as it is, untracked
        return ""


def tracked_url(*, key: str, send_id: int | None = None, broadcast_recipient_id: int | None = None) -> str:
    if broadcast_recipient_id is not None:
        token = broadcast_recipient_token(key=key, recipient_id=broadcast_recipient_id)
    else:
        assert send_id is not None
        token = recipient_token(key=key, send_id=send_id)
    return f"{settings.PUBLIC_BASE_URL}/l/{key}?{RECIPIENT_PARAM}={quote(token, safe=':')}"


def links_track(
    *, html: str, text: str, keys: dict[str, str], send_id: int | None = None, broadcast_recipient_id: int | None = None
) -> tuple[str, str]:
    """The step's (or broadcast's) HTML and text with each tracked destination replaced by its link, signed for
    `send_id` (or `broadcast_recipient_id`)."""

    def replace(url: str) -> str | None:
        key = keys.get(url)
        return tracked_url(key=key, send_id=send_id, broadcast_recipient_id=broadcast_recipient_id) if key else None

    return html_links_replace(html, replace) if html else "", text_links_replace(text, replace)


def broadcast_links_ensure(broadcast: Broadcast) -> dict[str, str]:
    """email_links_ensure for a broadcast: its links, in a post of its own, created under its row lock."""
    destinations = list(dict.fromkeys([*html_links(broadcast.html), *text_links(broadcast.body)]))
    destinations = [url for url in destinations if len(url) <= 2048 and not _ours(url)]
    if not destinations:
        return {}
    known = _known(broadcast, destinations)
    if len(known) < len(destinations):
        with transaction.atomic():
            Broadcast.objects.select_for_update().filter(pk=broadcast.pk).first()
            known = _known(broadcast, destinations)
            first = (
                BroadcastLink.objects.filter(broadcast=broadcast).select_related("link__post").order_by("pk").first()
            )
            if first is not None:
                post = first.link.post
            else:
                post = Post.objects.create(
                    workspace_id=broadcast.workspace_id, title=f"Broadcast: {broadcast.name}"[:200]
                )
            for destination in destinations:
                if destination not in known:
                    known[destination] = _broadcast_create(broadcast, post, destination)
    return known


def _broadcast_create(broadcast: Broadcast, post: Post, destination: str) -> str:
    try:
        with transaction.atomic():
            link = link_add(workspace=post.workspace, destination=destination, post=post)
            BroadcastLink.objects.create(
                workspace_id=broadcast.workspace_id, broadcast=broadcast, link=link, destination=destination
            )
            return link.key
    except Unprocessable:  # a URL link_add refuses: left as it is, untracked
        return ""
