"""Links managed as a product: chosen keys, UTM fields, tags, expiry, changes with their history, archive and delete."""

import re
from collections.abc import Iterable
from datetime import datetime
from typing import Any
from urllib.parse import quote_plus, unquote_plus, urlsplit, urlunsplit

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.db import IntegrityError, transaction
from django.db.models.functions import Lower
from django.utils import timezone

from clicks.models import KEY_PATTERN, UTM_FIELDS, Link, LinkChange, Post, Tag
from lftrack.errors import Unprocessable
from workspaces.models import ApiToken, Workspace

# The first segment of every path the service answers (lftrack/urls.py; lf.js has a dot, which no key has) and a few it
# may answer one day, in any letter case: no printed /l/<key> reads as one of them (docs/api.md, "Link keys").
# tests/rollups/test_links_api.py checks that lftrack/urls.py adds none without adding it here.
RESERVED_KEYS = frozenset(
    {"l", "u", "c", "invite", "hooks", "healthz", "readyz", "api", "admin", "demo", "static", "media", "login", "www"}
)
KEY_RULE = "key must be 1 to 64 letters, digits, - or _"
TAGS_MAX = 20  # per link
TAG_NAME_MAX = 50
UTM_MAX = 200
URL_MAX = 2048
# The fields a change may touch, in the order the history shows them.
CHANGEABLE = ("destination", "key", *UTM_FIELDS, "tags", "expires_at", "fallback_url")

_key = re.compile(KEY_PATTERN)
_url_validator = URLValidator(schemes=["http", "https"])


def link_key_check(key: str, *, link_id: int | None = None) -> str:
    """`key` when it may name a link (`link_id`'s, when it is changed); 422 naming the rule it breaks otherwise
    (it may still be taken by a live link: the unique index says)."""
    if not _key.fullmatch(key):
        raise Unprocessable(KEY_RULE)
    if key.lower() in RESERVED_KEYS:
        raise Unprocessable(f"key is reserved: {key}")
    # A key a link had before a change is never given to another link, as a deleted link's is not: emails and
    # QR codes still carry it, and an email's signed click token names the key (clicks/recipients.py).
    if LinkChange.objects.filter(before__key=key).exclude(link_id=link_id).exists():
        raise Unprocessable(f"key is taken: {key}")
    return key


def url_check(url: str, *, field: str) -> str:
    if len(url) > URL_MAX:
        raise Unprocessable(f"{field} is too long")
    try:
        _url_validator(url)
    except ValidationError:
        raise Unprocessable(f"{field} must be an http or https URL") from None
    return url


def utm_compose(destination: str, utm: dict[str, str]) -> str:
    """`destination` with each UTM parameter named in `utm` set to its value (removed when empty): a parameter
    appears at most once, the others and the fragment stay as they were."""
    parts = urlsplit(destination)
    kept = [p for p in parts.query.split("&") if p and unquote_plus(p.split("=", 1)[0]) not in utm]
    kept += [f"{name}={quote_plus(value)}" for name, value in utm.items() if value]
    return urlunsplit(parts._replace(query="&".join(kept)))


def utm_of(destination: str) -> dict[str, str]:
    """The UTM fields a destination carries (the first value of each; "" when absent)."""
    found = dict.fromkeys(UTM_FIELDS, "")
    for pair in urlsplit(destination).query.split("&"):
        name, _, value = pair.partition("=")
        name = unquote_plus(name)
        if name in found and not found[name]:
            found[name] = unquote_plus(value)[:UTM_MAX]
    return found


def _destination(destination: str, utm: dict[str, str]) -> tuple[str, dict[str, str]]:
    for name, value in utm.items():
        if name not in UTM_FIELDS:
            raise Unprocessable(f"unknown UTM field: {name}")
        if len(value) > UTM_MAX:
            raise Unprocessable(f"{name} is too long")
    url_check(destination, field="destination")
    # Without UTM fields the address stays byte for byte as given (urlunsplit would drop an empty "?" or "#").
    composed = url_check(utm_compose(destination, utm), field="destination") if utm else destination
    return composed, utm_of(composed)


def tags_resolve(*, workspace: Workspace, names: Iterable[str]) -> list[Tag]:
    """The workspace's tags of these names (matched whatever their letter case), the missing ones made."""
    wanted: dict[str, str] = {}
    for name in names:
        name = name.strip()
        if not name or len(name) > TAG_NAME_MAX:
            raise Unprocessable(f"a tag is 1 to {TAG_NAME_MAX} characters")
        wanted.setdefault(name.lower(), name)
    if len(wanted) > TAGS_MAX:
        raise Unprocessable(f"a link has at most {TAGS_MAX} tags")
    found = {
        tag.lower_name: tag
        for tag in Tag.objects.annotate(lower_name=Lower("name")).filter(
            workspace=workspace, lower_name__in=list(wanted)
        )
    }
    for lower, name in wanted.items():
        if lower not in found:
            # ON CONFLICT DO NOTHING and read back: two requests making the same new tag both get it.
            Tag.objects.bulk_create([Tag(workspace=workspace, name=name)], ignore_conflicts=True)
            found[lower] = Tag.objects.annotate(lower_name=Lower("name")).get(workspace=workspace, lower_name=lower)
    return [found[lower] for lower in wanted]


@transaction.atomic
def link_add(
    *,
    workspace: Workspace,
    destination: str,
    post: Post | None = None,
    post_title: str | None = None,
    key: str | None = None,
    utm: dict[str, str] | None = None,
    tags: Iterable[str] = (),
    expires_at: datetime | None = None,
    fallback_url: str = "",
) -> Link:
    """A tracked link with its post (`post`, or the post titled `post_title`, made if missing, or a new one of its
    own), a chosen `key` or a random one, UTM fields composed into the destination, tags, expiry and fallback."""
    destination, utm_fields = _destination(destination, utm or {})
    if fallback_url:
        url_check(fallback_url, field="fallback_url")
    if key is not None:
        link_key_check(key)
    if post is not None and post.workspace_id != workspace.pk:
        raise Unprocessable("unknown post")
    tag_rows = tags_resolve(workspace=workspace, names=tags)
    if post is None and post_title:
        post = Post.objects.filter(workspace=workspace, title=post_title[:200]).order_by("pk").first()
        if post is None:
            post = Post.objects.create(workspace=workspace, title=post_title[:200])
    elif post is None:
        post = Post.objects.create(workspace=workspace, title=destination[:200])
    fields: dict[str, Any] = {
        "workspace": workspace,
        "post": post,
        "destination": destination,
        "expires_at": expires_at,
        "fallback_url": fallback_url,
        **utm_fields,
    }
    # A 48-bit random key collides once in ~20 million keys at the earliest (docs/api.md, "Link keys"): retried.
    for _ in range(1 if key is not None else 5):
        try:
            with transaction.atomic():
                link = Link.objects.create(**fields, **({"key": key} if key is not None else {}))
                break
        except IntegrityError:
            continue
    else:
        if key is not None:
            raise Unprocessable(f"key is taken: {key}")
        raise RuntimeError("could not allocate a unique link key")
    link.tags.set(tag_rows)
    return link


def _shown(link: Link, field: str) -> Any:
    """A field's value as the history keeps it (JSON)."""
    if field == "tags":
        return sorted(tag.name for tag in link.tags.all())
    value = getattr(link, field)
    return value.isoformat() if isinstance(value, datetime) else value


@transaction.atomic
def link_update(
    *,
    link: Link,
    changes: dict[str, Any],
    user: AbstractBaseUser | None = None,
    token: ApiToken | None = None,
) -> Link:
    """Change a link (fields of CHANGEABLE, `tags` a list of names) and keep the change, by `user` or `token`, in
    its history. The redirect reads the link at each click: the change is followed at once by every process."""
    unknown = set(changes) - set(CHANGEABLE)
    if unknown:
        raise ValueError(f"not changeable: {sorted(unknown)}")
    link = Link.objects.select_for_update().get(pk=link.pk)  # two editors: one change after the other
    before = {field: _shown(link, field) for field in CHANGEABLE}
    utm = {name: changes[name] for name in UTM_FIELDS if name in changes}
    if "destination" in changes or utm:
        # The destination's own UTM parameters are taken as sent; the fields not sent are kept.
        given = changes.get("destination", link.destination)
        carried = {n: getattr(link, n) for n in UTM_FIELDS if n not in utm and "destination" in changes}
        carried = {n: v for n, v in carried.items() if v and not utm_of(given)[n]}
        link.destination, utm_fields = _destination(given, {**carried, **utm})
        for name, value in utm_fields.items():
            setattr(link, name, value)
    if "key" in changes and changes["key"] != link.key:
        link.key = link_key_check(changes["key"], link_id=link.pk)
    if "expires_at" in changes:
        link.expires_at = changes["expires_at"]
    if "fallback_url" in changes:
        link.fallback_url = changes["fallback_url"] and url_check(changes["fallback_url"], field="fallback_url")
    try:
        with transaction.atomic():
            link.save()
    except IntegrityError:
        raise Unprocessable(f"key is taken: {link.key}") from None
    if "tags" in changes:
        link.tags.set(tags_resolve(workspace=link.workspace, names=changes["tags"]))
    after = {field: _shown(link, field) for field in CHANGEABLE}
    _history_add(link, before, after, user=user, token=token)
    return link


def _history_add(
    link: Link, before: dict, after: dict, *, user: AbstractBaseUser | None, token: ApiToken | None
) -> None:
    changed = [field for field in before if before[field] != after[field]]
    if changed:
        LinkChange.objects.create(
            workspace_id=link.workspace_id,
            link=link,
            changed_at=timezone.now(),
            user=user,
            token=token,
            before={field: before[field] for field in changed},
            after={field: after[field] for field in changed},
        )


@transaction.atomic
def link_archive(
    *, link: Link, archived: bool = True, user: AbstractBaseUser | None = None, token: ApiToken | None = None
) -> Link:
    """Archive a link (out of lists and pickers, still redirecting), or bring it back."""
    link = Link.objects.select_for_update().get(pk=link.pk)
    if (link.archived_at is not None) != archived:
        link.archived_at = timezone.now() if archived else None
        link.save(update_fields=["archived_at", "updated_at"])
        _history_add(link, {"archived": not archived}, {"archived": archived}, user=user, token=token)
    return link


@transaction.atomic
def link_delete(*, link: Link, user: AbstractBaseUser | None = None, token: ApiToken | None = None) -> None:
    """Delete a link: from the next click on, its key answers 404 (or the workspace's fallback page). Its row stays,
    with its clicks and conversions, in the numbers; its key stays taken, so a printed link never changes owner."""
    link = Link.objects.select_for_update().get(pk=link.pk)
    if link.deleted_at is None:
        link.deleted_at = timezone.now()
        link.save(update_fields=["deleted_at", "updated_at"])
        _history_add(link, {"deleted": False}, {"deleted": True}, user=user, token=token)
