"""Uploaded import files waiting for their confirmation: in the shared cache, for an hour, at most three per user.

The cache (Redis in production) is shared by every worker, whichever answers the confirmation, and also holds
the rate limits and the token revocations: an upload is kept only once it is read, bounded and previewed
without an error (backoffice/contact_csv.py), as its parsed rows, and it leaves on its import, on "Choose
another file", after an hour, or when its user's fourth upload takes its slot.
"""

import logging
import uuid

from django.core.cache import cache

logger = logging.getLogger("lftrack.backoffice")

LIFETIME_SECONDS = 3600
PER_USER = 3


class UploadLost(Exception):
    """The upload is no longer kept: confirmed already, replaced, expired, or the cache is down."""


def _key(user_id: int, slot: str) -> str:
    return f"import-upload:{user_id}:{slot}"


def _slot_key(user_id: int, name: str) -> str:
    """The cache key of the slot that `name` (sent back by the browser) says it is in; UploadLost for junk."""
    slot = name.partition("-")[0]
    if slot not in {str(n) for n in range(PER_USER)}:
        raise UploadLost
    return _key(user_id, slot)


def upload_keep(*, user_id: int, rows: list[tuple]) -> str:
    """Keep `rows` for the user's confirmation; the name to confirm them by.

    A user's uploads take PER_USER slots in turn (the counter is atomic on Redis as in the local cache), so the
    fourth replaces the first: a user who leaves previews unconfirmed holds at most PER_USER of them.
    """
    counter = _key(user_id, "count")
    try:
        cache.add(counter, 0, LIFETIME_SECONDS)
        try:
            serial = cache.incr(counter)
        except ValueError:  # it expired between the two calls
            serial = 1
            cache.set(counter, serial, LIFETIME_SECONDS)
        name = f"{serial % PER_USER}-{uuid.uuid4().hex}"
        cache.set(_slot_key(user_id, name), (name, rows), LIFETIME_SECONDS)
    except Exception as exc:  # redis.ConnectionError, timeouts
        logger.warning("import upload not kept: cache unavailable (%s)", type(exc).__name__)
        raise UploadLost from exc
    return name


def upload_take(*, user_id: int, name: str) -> list[tuple]:
    """The rows kept under `name` for this user (another user's name finds nothing); UploadLost if gone."""
    key = _slot_key(user_id, name)
    try:
        kept = cache.get(key)
    except Exception as exc:
        logger.warning("import upload not read: cache unavailable (%s)", type(exc).__name__)
        raise UploadLost from exc
    if kept is None or kept[0] != name:
        raise UploadLost
    return kept[1]


def upload_drop(*, user_id: int, name: str) -> None:
    """Forget the upload `name`, if it is still kept; a cache that is down lets it expire instead."""
    try:
        key = _slot_key(user_id, name)
    except UploadLost:
        return
    try:
        kept = cache.get(key)
        if kept is not None and kept[0] == name:
            cache.delete(key)
    except Exception as exc:
        logger.warning("import upload not removed, it expires in an hour: cache unavailable (%s)", type(exc).__name__)
