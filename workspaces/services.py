"""Workspace and API-token rules: creation, hashing, authentication and revocation."""
import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from lftrack.db import prepared_cursor
from lftrack.errors import NotFound, Unprocessable
from workspaces.models import ApiToken, Membership, Workspace

TOKEN_PREFIX = "lf_"
# lf_ + token_urlsafe(32): 43 characters of base64url, 256 bits.
_TOKEN_RE = re.compile(r"^lf_[A-Za-z0-9_-]{43}$")
_SLUG_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,99}$")
# last_used_at is a hint for the admin, not an audit log: write it at most once a minute per token.
LAST_USED_GRANULARITY = timedelta(minutes=1)


@dataclass(frozen=True)
class IssuedToken:
    token: ApiToken
    secret: str  # shown once, never stored


def token_digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


@transaction.atomic
def workspace_create(*, slug: str, name: str = "", owner_username: str | None = None) -> Workspace:
    if not _SLUG_RE.match(slug):
        raise Unprocessable("slug must be lowercase letters, digits and hyphens")
    owner = None
    if owner_username:
        owner = get_user_model().objects.filter(username=owner_username).first()
        if owner is None:
            raise NotFound(f"unknown user: {owner_username}")
    try:
        with transaction.atomic():
            workspace = Workspace.objects.create(slug=slug, name=name or slug)
    except IntegrityError:
        raise Unprocessable(f"workspace already exists: {slug}") from None
    if owner is not None:
        membership_set(workspace=workspace, user=owner, role=Membership.Role.OWNER)
    return workspace


@transaction.atomic
def membership_set(*, workspace: Workspace, user, role: str) -> Membership:
    """Give `user` a role in `workspace`; members are staff so they can use the admin."""
    membership, _ = Membership.objects.update_or_create(user=user, workspace=workspace, defaults={"role": role})
    if not user.is_staff:
        user.is_staff = True
        user.save(update_fields=["is_staff"])
    return membership


def workspace_get(*, slug: str) -> Workspace:
    workspace = Workspace.objects.filter(slug=slug).first()
    if workspace is None:
        raise NotFound(f"unknown workspace: {slug}")
    return workspace


def api_token_create(*, workspace: Workspace, name: str, created_by=None) -> IssuedToken:
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        workspace=workspace,
        name=name[:100] or "API token",
        prefix=secret[len(TOKEN_PREFIX) : len(TOKEN_PREFIX) + 8],
        digest=token_digest(secret),
        created_by=created_by,
    )
    return IssuedToken(token=token, secret=secret)


def api_token_revoke(*, workspace: Workspace, token_id: int) -> ApiToken:
    token = ApiToken.objects.filter(workspace=workspace, pk=token_id).first()
    if token is None:
        raise NotFound(f"unknown token: {token_id}")
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token


# Every API request runs this: one raw, prepared, indexed query, because compiling the ORM's
# select_related costs several times the round trip itself. Only the columns requests use are read
# (in the models' field order, as Model.from_db() expects); the others are deferred fields, loaded
# on first access.
_TOKEN_COLUMNS = tuple(
    f.attname for f in ApiToken._meta.concrete_fields if f.attname in {"id", "workspace_id", "name", "prefix", "digest"}
)
_WORKSPACE_COLUMNS = tuple(
    f.attname
    for f in Workspace._meta.concrete_fields
    if f.attname in {"id", "name", "slug", "tracking_key", "allowed_origins", "daily_send_limit"}
)
_DIGEST = _TOKEN_COLUMNS.index("digest")
_AUTHENTICATE_SQL = (
    "SELECT " + ", ".join([f"t.{c}" for c in _TOKEN_COLUMNS] + [f"w.{c}" for c in _WORKSPACE_COLUMNS])
    + ", (t.last_used_at IS NULL OR t.last_used_at <= %s)"
    + f" FROM {ApiToken._meta.db_table} t JOIN {Workspace._meta.db_table} w ON w.id = t.workspace_id"
    + " WHERE t.prefix = %s AND t.revoked_at IS NULL"
)


def api_token_authenticate(secret: str) -> ApiToken | None:
    """The active token for `secret` (with its workspace), or None.

    One indexed lookup by prefix; digests compared in constant time.
    """
    if not _TOKEN_RE.match(secret):
        return None
    digest = token_digest(secret)
    prefix = secret[len(TOKEN_PREFIX) : len(TOKEN_PREFIX) + 8]
    now = timezone.now()
    stale_before = connection.ops.adapt_datetimefield_value(now - LAST_USED_GRANULARITY)
    with prepared_cursor() as cursor:
        cursor.execute(_AUTHENTICATE_SQL, [stale_before, prefix])
        rows = cursor.fetchall()
    split = len(_TOKEN_COLUMNS)
    for row in rows:
        if hmac.compare_digest(row[_DIGEST], digest):
            token = ApiToken.from_db(connection.alias, _TOKEN_COLUMNS, row[:split])
            token.workspace = Workspace.from_db(connection.alias, _WORKSPACE_COLUMNS, row[split:-1])
            if row[-1]:  # last_used_at is a hint for the admin: written at most once a minute
                ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
                token.last_used_at = now
            return token
    return None
