"""Reads of clicks: what the latest clicks of some links came from, for the back office's link and post pages."""

from django.db import connection

from clicks.models import Click, Link

DIMENSIONS = (("device", "Device"), ("browser", "Browser"), ("os", "OS"), ("referrer_domain", "Referrer"))
# Per link, the latest clicks only: bounded work on a page whatever a link's history (the (link, id)
# index hands them over newest first), and what a marketer asks about is recent traffic anyway.
SAMPLE = 10_000

_BREAKDOWN_SQL = f"""
WITH recent AS (
    SELECT c.device, c.browser, c.os, c.referrer_domain
    FROM {Link._meta.db_table} AS l
    CROSS JOIN LATERAL (
        SELECT device, browser, os, referrer_domain FROM {Click._meta.db_table}
        WHERE link_id = l.id ORDER BY id DESC LIMIT %s
    ) c
    WHERE l.id = %s OR l.post_id = %s
)
""" + " UNION ALL ".join(
    f"(SELECT '{column}', {column}, count(*) FROM recent GROUP BY {column} ORDER BY count(*) DESC, {column} LIMIT %s)"
    for column, _ in DIMENSIONS
)


def clicks_breakdown(
    *, link_id: int | None = None, post_id: int | None = None, top: int = 5
) -> dict[str, list[tuple[str, int]]]:
    """For each dimension, its `top` values among the latest SAMPLE clicks of the link, or of each link of
    the post, with their counts (bots included, as device "bot"; "" where a click said nothing). One query."""
    result: dict[str, list[tuple[str, int]]] = {column: [] for column, _ in DIMENSIONS}
    with connection.cursor() as cursor:
        cursor.execute(_BREAKDOWN_SQL, [SAMPLE, link_id, post_id, *([top] * len(DIMENSIONS))])
        for column, value, count in cursor.fetchall():
            result[column].append((value, count))
    return result
