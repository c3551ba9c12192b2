"""The signed recipient token of a campaign email's tracked link (`?lf_e=<send id>:<signature>` on `/l/<key>`), and
the click it attributes."""

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


def recipient_verify(*, key: str, token: str) -> int | None:
    """The send id a token of link `key` carries, or None for a forged, altered or foreign one."""
    if not token or len(token) > 100:
        return None
    try:
        value = _signer(key).unsign(token)
    except signing.BadSignature:
        return None
    return int(value) if value.isdigit() and len(value) < 19 else None


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


_ASYNC_COMMIT_SQL = "SET LOCAL synchronous_commit TO OFF"
_RECORD_SQL = f"""
UPDATE {Click._meta.db_table} SET email_send_id = %(send_id)s
WHERE click_id = %(click_id)s AND email_send_id IS NULL
"""
