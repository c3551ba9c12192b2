"""The signed recipient token of a campaign email's tracked link (`?lf_e=<send id>:<signature>` on `/l/<key>`, or
`b<recipient id>:<signature>` for a broadcast's), and the click it attributes."""

from django.core import signing
from django.db import connection, transaction

from clicks.models import Click

RECIPIENT_PARAM = "lf_e"


def _signer(key: str) -> signing.Signer:
    # HMAC-SHA256 of SECRET_KEY with a salt naming the link: a token is good for that link only, so neither
    # a send id (sequential) nor a token moved onto another link, of this workspace or another, passes.
    return signing.Signer(salt=f"lftrack.email-click.{key}", algorithm="sha256")


def recipient_token(*, key: str, send_id: int) -> str:
    return _signer(key).sign(str(send_id))


def broadcast_recipient_token(*, key: str, recipient_id: int) -> str:
    # A `b` before the id: a sequence send's token and a broadcast recipient's never stand for each other.
    return _signer(key).sign(f"b{recipient_id}")


def _unsigned(key: str, token: str) -> str | None:
    if not token or len(token) > 100:
        return None
    try:
        return _signer(key).unsign(token)
    except signing.BadSignature:
        return None


def recipient_verify(*, key: str, token: str) -> int | None:
    """The send id a token of link `key` carries, or None for a forged, altered or foreign one."""
    value = _unsigned(key, token)
    return int(value) if value is not None and value.isdigit() and len(value) < 19 else None


def broadcast_recipient_verify(*, key: str, token: str) -> int | None:
    """The broadcast recipient id a token of link `key` carries, or None."""
    value = _unsigned(key, token)
    if value is None or not value.startswith("b"):
        return None
    number = value[1:]
    return int(number) if number.isdigit() and len(number) < 19 else None


def click_recipient_record(*, click_id: str, send_id: int) -> None:
    """Mark the click just recorded as coming from the email send `send_id` (checked by its signature).

    A second statement after the redirect's batched insert (clicks/services.py), for email clicks only,
    rather than a column more in that statement: every other click pays nothing, and the batch keeps
    its shape (docs/email.md, "Tracked links"). Committed without waiting for the WAL flush: a crash
    in the next few hundred milliseconds may lose the attribution, never the click, which then stays an
    ordinary click; the visitor is not kept waiting 2 to 3 ms for fdatasync (lftrack/batching.py).
    """
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(_ASYNC_COMMIT_SQL)
        cursor.execute(_RECORD_SQL, {"send_id": send_id, "click_id": click_id})


def click_broadcast_record(*, click_id: str, recipient_id: int) -> None:
    """As click_recipient_record, for a broadcast's link: the click comes from that broadcast recipient."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(_ASYNC_COMMIT_SQL)
        cursor.execute(_BROADCAST_SQL, {"recipient_id": recipient_id, "click_id": click_id})


_ASYNC_COMMIT_SQL = "SET LOCAL synchronous_commit TO OFF"
_RECORD_SQL = f"""
UPDATE {Click._meta.db_table} SET email_send_id = %(send_id)s
WHERE click_id = %(click_id)s AND email_send_id IS NULL
"""
_BROADCAST_SQL = f"""
UPDATE {Click._meta.db_table} SET broadcast_recipient_id = %(recipient_id)s
WHERE click_id = %(click_id)s AND broadcast_recipient_id IS NULL
"""
