"""API tokens: issued (the secret shown once, its digest kept), revoked, and authenticated on every request, each
process keeping copies of its lookups while the token generation in Redis stands."""

import hashlib
import hmac
import logging
import re
import secrets
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import NamedTuple

from django.conf import settings
from django.contrib.auth.models import User
from django.db import connection, transaction
from django.utils import timezone

from lftrack.db import from_row, prepared_cursor
from lftrack.errors import NotFound, Unprocessable
from lftrack.ratelimit import breaker
from lftrack.sharedcache import redis_cache, redis_command
from workspaces.models import ApiToken, Workspace

TOKEN_PREFIX = "lf_"
TEST_TOKEN_PREFIX = "lf_test_"
# lf_ (lf_test_ for a test token) + token_urlsafe(32): 43 characters of base64url, 256 bits.
_TOKEN_RE = re.compile(r"^lf_(test_)?[A-Za-z0-9_-]{43}$")


def _prefix(secret: str) -> str:
    """The first 8 random characters: stored, indexed, shown in the admin."""
    return secret[-43:][:8]


# last_used_at is a hint for the admin, not an audit log: write it at most once a minute per token.
LAST_USED_GRANULARITY = timedelta(minutes=1)

logger = logging.getLogger("lftrack.tokens")


@dataclass(frozen=True)
class IssuedToken:
    token: ApiToken
    secret: str  # shown once, never stored


def token_digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def api_token_create(
    *,
    workspace: Workspace,
    name: str,
    created_by: User | None = None,
    secret: str | None = None,
    scopes: list[str] | None = None,
    test: bool = False,
) -> IssuedToken:
    """A new token, allowed `scopes` (ApiToken.Scope; none: everything); `test`: a test token (lf_test_...),
    whose records are test data. `secret` only for one the caller derived itself (the demo's, from SECRET_KEY)."""
    secret = secret or (TEST_TOKEN_PREFIX if test else TOKEN_PREFIX) + secrets.token_urlsafe(32)
    if not _TOKEN_RE.match(secret) or secret.startswith(TEST_TOKEN_PREFIX) != test:
        raise ValueError("a token secret is lf_ (lf_test_ for a test token) and 43 base64url characters")
    unknown = sorted(set(scopes or ()) - set(ApiToken.Scope.values))
    if unknown:
        raise Unprocessable(f"unknown scope: {', '.join(unknown)} (one of {', '.join(ApiToken.Scope.values)})")
    token = ApiToken.objects.create(
        workspace=workspace,
        scopes=" ".join(scope for scope in ApiToken.Scope.values if scope in (scopes or ())),
        name=name[:100] or "API token",
        prefix=_prefix(secret),
        digest=token_digest(secret),
        created_by=created_by,
        is_test=test,
    )
    return IssuedToken(token=token, secret=secret)


def api_token_revoke(*, workspace: Workspace, token_id: int) -> ApiToken:
    """Revoke a token. When this returns, no process accepts it any more (see api_token_authenticate)."""
    token = ApiToken.objects.filter(workspace=workspace, pk=token_id).first()
    if token is None:
        raise NotFound(f"unknown token: {token_id}")
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
        # After the commit (of the caller's transaction, if any): before it, a process would read the token
        # as still active, and keep it under the new generation.
        transaction.on_commit(api_tokens_changed)
    return token


# Every API request runs this: one raw, prepared, indexed query, because compiling the ORM's
# select_related costs several times the round trip itself. Only the columns requests use are read
# (lftrack.db.from_row builds the instances); the others are deferred fields, loaded on first access.
_TOKEN_COLUMNS = tuple(
    f.attname
    for f in ApiToken._meta.concrete_fields
    if f.attname in {"id", "workspace_id", "name", "prefix", "digest", "scopes", "is_test"}
)
_WORKSPACE_COLUMNS = tuple(
    f.attname
    for f in Workspace._meta.concrete_fields
    if f.attname in {"id", "name", "slug", "tracking_key", "allowed_origins", "daily_send_limit", "currency"}
)
# The workspace's columns come as w_<column>: the two tables share column names. `stale`: last_used_at is due.
_AUTHENTICATE_SQL = f"""SELECT {", ".join(f"t.{c}" for c in _TOKEN_COLUMNS)},
        {", ".join(f"w.{c} AS w_{c}" for c in _WORKSPACE_COLUMNS)},
        (t.last_used_at IS NULL OR t.last_used_at <= %(stale_before)s) AS stale
    FROM {ApiToken._meta.db_table} t JOIN {Workspace._meta.db_table} w ON w.id = t.workspace_id
    WHERE t.prefix = %(prefix)s AND t.revoked_at IS NULL"""

# The tokens this process authenticated lately: digest -> (the token generation it was read under, when
# it expires (time.time()), its row). Served only while the shared cache (Redis) still holds that
# generation: a revocation replaces the generation after it commits, so every process reads the
# database again on its next request (api_tokens_changed). TOKEN_CACHE_SECONDS bounds an entry's life,
# and so the wait of a revocation that could not reach Redis.
_tokens: dict[str, tuple[bytes, float, NamedTuple]] = {}
_TOKENS_KEPT = 10_000
_GENERATION_KEY = "lftrack:api-token-generation"


def api_token_authenticate(secret: str) -> ApiToken | None:
    """The active token for `secret` (with its workspace), or None.

    One indexed lookup by prefix, digests compared in constant time; or this process's copy of that
    lookup while the token generation in Redis is the one it was read under (one GET instead of the
    query: docs/benchmarks.md, "Tokens kept per process"). Without Redis, every request reads the
    database: no copy is ever served that a revocation could not invalidate.
    """
    if not _TOKEN_RE.match(secret):
        return None
    digest = token_digest(secret)
    generation = _generation()
    if generation is not None:
        kept = _tokens.get(digest)
        if kept is not None and kept[0] == generation and kept[1] > time.time():
            return _token_of(kept[2])
    prefix = _prefix(secret)
    now = timezone.now()
    stale_before = connection.ops.adapt_datetimefield_value(now - LAST_USED_GRANULARITY)
    with prepared_cursor() as cursor:
        cursor.execute(_AUTHENTICATE_SQL, {"stale_before": stale_before, "prefix": prefix})
        rows = cursor.fetchall()
    for row in rows:
        if hmac.compare_digest(row.digest, digest):
            token = _token_of(row)
            if row.stale:  # last_used_at is a hint for the admin: written at most once a minute
                ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
                token.last_used_at = now
            if generation is not None and settings.TOKEN_CACHE_SECONDS > 0:
                if len(_tokens) >= _TOKENS_KEPT:
                    _tokens.clear()
                _tokens[digest] = (generation, time.time() + settings.TOKEN_CACHE_SECONDS, row)
            return token
    return None


def _token_of(row: NamedTuple) -> ApiToken:
    """A fresh ApiToken and Workspace for each request (callers may change them), from the lookup's row."""
    workspace = from_row(Workspace, {c: getattr(row, f"w_{c}") for c in _WORKSPACE_COLUMNS})
    return from_row(ApiToken, {c: getattr(row, c) for c in _TOKEN_COLUMNS}, workspace=workspace)


def _generation() -> bytes | None:
    """The token generation in Redis, or None when copies must not be served: no Redis (REDIS_URL unset),
    Redis unreachable (the rate limits' circuit breaker open), or no generation yet (a new or restarted
    Redis: one is set, so a copy made under a generation Redis forgot is never served again)."""
    cache = redis_cache()
    if cache is None or settings.TOKEN_CACHE_SECONDS <= 0 or not breaker.allows():
        return None
    key = cache.make_key(_GENERATION_KEY)
    try:
        generation = redis_command(cache, "GET", key)
        if generation is None:
            redis_command(cache, "SET", key, secrets.token_hex(16), "NX")
    except Exception as exc:  # redis.ConnectionError, timeouts: the database answers instead
        breaker.failed(exc)
        return None
    breaker.succeeded()
    return generation


def api_tokens_changed(*, wait: bool = True) -> None:
    """Make every process read tokens from the database again: call after a token's revocation commits.

    Replaces the generation in Redis with a new random one. When Redis cannot be reached, waits until every
    copy a process may hold has expired (TOKEN_CACHE_SECONDS), so that a revoked token is never accepted
    once its revocation has returned; with `wait` false (a workspace's settings, which the copies carry:
    its currency, its allowed origins), the copies are left to expire.
    """
    cache = redis_cache()
    if cache is None or settings.TOKEN_CACHE_SECONDS <= 0:
        return  # nothing is kept without Redis
    try:
        redis_command(cache, "SET", cache.make_key(_GENERATION_KEY), secrets.token_hex(16))
    except Exception as exc:
        if not wait:
            logger.warning("workspace changed; token copies left to expire: cache unavailable (%s)", type(exc).__name__)
            return
        logger.warning(
            "token revoked; waiting %s s for the processes' copies to expire: cache unavailable (%s)",
            settings.TOKEN_CACHE_SECONDS,
            type(exc).__name__,
        )
        time.sleep(settings.TOKEN_CACHE_SECONDS)


def workspace_changed() -> None:
    """A workspace's row changed (its settings, its allowed origins), which the token copies carry: they are read
    again, or left to expire when Redis cannot be reached."""
    api_tokens_changed(wait=False)
