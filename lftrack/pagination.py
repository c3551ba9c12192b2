"""Pagination of the read API (GET /api/v1/conversions, /customers, ...): `limit` and a keyset `cursor` in, a page of
`{"data": [...], "next": cursor}` out, and the query parameters the lists filter by."""

from base64 import urlsafe_b64decode, urlsafe_b64encode

from lftrack.errors import Unprocessable
from lftrack.fields import BIGINT_MAX, aware_utc

PAGE_LIMIT_MAX = 100
PAGE_ERRORS = [f"limit must be 1 to {PAGE_LIMIT_MAX}", "invalid cursor"]


def query_int(params, name: str, *, high: int = BIGINT_MAX) -> int | None:
    """A positive integer query parameter; None when absent; 422 `<name> must be an integer` otherwise."""
    raw = params.get(name)
    if raw is None:
        return None
    # ASCII digits only, and few of them: int() refuses "²" and 5,000-digit strings with a ValueError (a 500).
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 19) or not 1 <= int(raw) <= high:
        raise Unprocessable(f"{name} must be an integer")
    return int(raw)


def query_time(params, name: str):
    """A time query parameter; None when absent; 422 `<name> must be an ISO 8601 time with an offset` otherwise."""
    raw = params.get(name)
    if raw is None:
        return None
    moment = aware_utc(raw)
    if moment is None:
        raise Unprocessable(f"{name} must be an ISO 8601 time with an offset")
    return moment


def cursor_encode(*keyset) -> str:
    """A keyset (a time, then integers) as an opaque cursor."""
    moment, *numbers = keyset
    return urlsafe_b64encode("|".join([moment.isoformat(), *map(str, numbers)]).encode()).decode().rstrip("=")


def page_position(params, *, ranked: bool = False) -> tuple[int, tuple | None]:
    """(limit, keyset after which the page starts) from `limit` (1 to 100, 50) and `cursor`: (time, id), or
    (time, rank, id) where rows of several sources are merged."""
    raw = params.get("limit")
    if raw is not None and (
        not (raw.isascii() and raw.isdigit() and len(raw) <= 3) or not 1 <= int(raw) <= PAGE_LIMIT_MAX
    ):
        raise Unprocessable(f"limit must be 1 to {PAGE_LIMIT_MAX}")
    cursor = params.get("cursor")
    if not cursor:
        return int(raw or 50), None
    try:
        moment, *numbers = urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode().split("|")
        at = aware_utc(moment)
        if (
            at is None
            or len(numbers) != (2 if ranked else 1)
            or not all(n.isdigit() and int(n) <= BIGINT_MAX for n in numbers)
        ):
            raise ValueError
    except (ValueError, UnicodeDecodeError):
        raise Unprocessable("invalid cursor") from None
    return int(raw or 50), (at, *map(int, numbers))


def page_out(rows: list, limit: int, item_out, *, at) -> dict:
    """`{"data": [...], "next": cursor | null}` from `limit` + 1 rows; `at(row)` is the row's keyset time."""
    data, more = rows[:limit], len(rows) > limit
    return {"data": [item_out(row) for row in data], "next": cursor_encode(at(data[-1]), data[-1].pk) if more else None}
