"""Reads of clicks: what the latest clicks of some links came from, for the back office's link and post pages."""

from clicks.models import Click, Link
from lftrack.db import sql_cursor

DIMENSIONS = (("device", "Device"), ("browser", "Browser"), ("os", "OS"), ("referrer_domain", "Referrer"))
# Per link, the latest clicks only: bounded work on a page whatever a link's history (the (link, id)
# index hands them over newest first), and what a marketer asks about is recent traffic anyway.
SAMPLE = 10_000

_COLUMNS = ", ".join(column for column, _ in DIMENSIONS)
# Each dimension's top values (dimension, value, clicks), one branch of the UNION per dimension.
_TOPS = " UNION ALL ".join(
    f"""(SELECT '{column}' AS dimension, {column} AS value, count(*) AS clicks FROM recent
    GROUP BY {column} ORDER BY count(*) DESC, {column} LIMIT %(top)s)"""
    for column, _ in DIMENSIONS
)
_BREAKDOWN_SQL = f"""
WITH recent AS (
    SELECT {", ".join(f"c.{column}" for column, _ in DIMENSIONS)}
    FROM {Link._meta.db_table} AS l
    CROSS JOIN LATERAL (
        SELECT {_COLUMNS} FROM {Click._meta.db_table}
        WHERE link_id = l.id ORDER BY id DESC LIMIT %(sample)s
    ) c
    WHERE l.id = %(link_id)s OR l.post_id = %(post_id)s
)
{_TOPS}
"""


def clicks_breakdown(
    *, link_id: int | None = None, post_id: int | None = None, top: int = 5
) -> dict[str, list[tuple[str, int]]]:
    """For each dimension, its `top` values among the latest SAMPLE clicks of the link, or of each link of
    the post, with their counts (bots included, as device "bot"; "" where a click said nothing). One query."""
    result: dict[str, list[tuple[str, int]]] = {column: [] for column, _ in DIMENSIONS}
    with sql_cursor() as cursor:
        cursor.execute(_BREAKDOWN_SQL, {"sample": SAMPLE, "link_id": link_id, "post_id": post_id, "top": top})
        for row in cursor.fetchall():
            result[row.dimension].append((row.value, row.clicks))
    return result
