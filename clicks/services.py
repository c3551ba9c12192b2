"""Click recording, including the `lf_cid` rewrite of destinations (links are made in clicks/links.py)."""

import functools
import logging
import operator
from collections.abc import Sequence
from typing import NamedTuple
from urllib.parse import quote, unquote, urlsplit, urlunsplit

from django.conf import settings
from django.db import DatabaseError

from clicks.agents import referrer_domain, user_agent_describe
from clicks.geo import city_of, country_of
from clicks.models import Click, Link, new_click_id
from lftrack.batching import Batcher
from lftrack.db import prepared_cursor
from lftrack.ratelimit import Limit, ip_key, limit_exceeded
from webhooks.outbox import emitted_sql, events_queue
from workspaces.models import Workspace

CLICK_PARAM = "lf_cid"
logger = logging.getLogger("lftrack.redirect")


def destination_with_click_id(destination: str, click_id: str) -> str:
    """`destination` with `lf_cid=<click_id>`: other parameters and the fragment kept byte for byte."""
    head, tail = _click_id_slot(destination)
    return f"{head}{quote(click_id, safe='')}{tail}"


@functools.lru_cache(maxsize=10_000)
def _click_id_slot(destination: str) -> tuple[str, str]:
    """What comes before and after the click id in `destination`'s redirect: parsed once per destination
    and process (10,000 kept), since parsing and rebuilding the URL cost each redirect 0.1 M instructions
    (a tenth of a click's Python: docs/benchmarks.md, "Per-process caches on the redirect")."""
    parts = urlsplit(destination)
    kept = [p for p in parts.query.split("&") if p and unquote(p.split("=", 1)[0]) != CLICK_PARAM]
    kept.append(f"{CLICK_PARAM}=")
    return urlunsplit(parts._replace(query="&".join(kept), fragment="")), f"#{parts.fragment}" if parts.fragment else ""


# A click's visit, as click_follow hands it to the batch that records it.
class _Visit(NamedTuple):
    key: str
    click_id: str
    user_agent: str
    referrer: str
    is_bot: bool
    device: str
    browser: str
    os: str
    referrer_domain: str
    country: str
    city: str
    client: str  # the address the click limit counts (not stored)


# A visitor never sees an error: past the limit the redirect answers as usual, recording nothing.
CLICKS_PER_IP = Limit("redirect-ip", ip_key, "RATELIMIT_REDIRECT_IP")


# The columns of a visit the statement writes, in the order of its VALUES rows: they give the rows' `$n` and
# the parameters (_visit_values) both, and `recorded` follows them (false past the click limit).
_VISIT_COLUMNS = (
    "key",
    "click_id",
    "user_agent",
    "referrer",
    "is_bot",
    "device",
    "browser",
    "os",
    "referrer_domain",
    "country",
    "city",
)
_visit_values = operator.attrgetter(*_VISIT_COLUMNS)
_ROW_COLUMNS = (*_VISIT_COLUMNS, "recorded")
_CASTS = {"is_bot": "::boolean", "recorded": "::boolean"}  # the others are text, as their columns


def _visit_row(n: int) -> str:
    """The VALUES row of the `n`th visit (from 1): its parameters, then n itself."""
    first = (n - 1) * len(_ROW_COLUMNS) + 1
    slots = (f"${first + i}{_CASTS.get(column, '')}" for i, column in enumerate(_ROW_COLUMNS))
    return f"({', '.join(slots)}, {n})"


# Links no longer followed (clicks/links.py): a deleted link, or an expired one. Such a visit records no click and
# goes to the link's fallback (an expired link's only), else the workspace's, else nowhere (a 404): a subquery
# only a gone link's visit evaluates, so a live link's click costs nothing more (docs/api.md, "Deleted and expired
# links"; docs/benchmarks.md, "Deleted and expired links on the redirect").
_GONE = "((link.deleted_at IS NOT NULL OR link.expires_at <= now()) IS TRUE)"  # never NULL: no expiry is FALSE
_FALLBACK = f"""COALESCE(
            CASE WHEN link.deleted_at IS NULL THEN NULLIF(link.fallback_url, '') END,
            (SELECT NULLIF(ws.link_fallback_url, '') FROM {Workspace._meta.db_table} ws WHERE ws.id = link.workspace_id))"""


# The redirect's one statement, for a batch of `size` visits (rows of _Visit's columns, `recorded` false
# past the click limit): find each link by its key, insert the recorded visits' clicks, return each
# found visit's destination (a gone link's fallback: _GONE), in one round trip and one commit (autocommit), prepared once per
# connection and batch size (lftrack/db.py). No row for an unknown key, and then no click.
# Rows of VALUES, not arrays through unnest(): psycopg adapts ten lists in 0.1 ms more Python per
# statement than the same values as scalars; `$n` placeholders, as psycopg would otherwise parse a
# statement of more than 50 parameters anew each time (lftrack/db.py; docs/benchmarks.md, "One statement for
# a batch of clicks").
# The same statement writes a `click.created` webhook event per recorded click of a workspace with an
# endpoint that asked for clicks, returned in rows of their own (n NULL); else it costs a probe of an
# empty index per click (docs/benchmarks.md, "The redirect's click.created").
@functools.cache
def _follow_sql(size: int) -> str:
    return f"""
WITH visit ({", ".join(_ROW_COLUMNS)}, n) AS (
    VALUES {", ".join(_visit_row(n) for n in range(1, size + 1))}
),
found AS (
    SELECT visit.*, link.id AS link_id, link.workspace_id, link.utm_source, link.utm_medium, link.utm_campaign,
        {_GONE} AS gone,
        CASE WHEN {_GONE} THEN {_FALLBACK} ELSE link.destination END AS destination
    FROM visit JOIN {Link._meta.db_table} link ON link.key = visit.key
),
click AS (
    INSERT INTO {Click._meta.db_table}
        (workspace_id, link_id, click_id, created_at, user_agent, referrer, is_bot, device, browser, os, referrer_domain,
         country, city, utm_source, utm_medium, utm_campaign)
    SELECT workspace_id, link_id, click_id, now(), user_agent, referrer, is_bot, device, browser, os, referrer_domain,
        country, city, utm_source, utm_medium, utm_campaign
    FROM found WHERE recorded AND NOT gone
    RETURNING id, workspace_id
),
event AS (
    {emitted_sql(rows="click", workspace_id="click.workspace_id", type="'click.created'", test="FALSE", subject_id="click.id")}
)
SELECT n, destination, gone, NULL::bigint AS event_id, NULL::bigint AS workspace_id FROM found
UNION ALL SELECT NULL, NULL, NULL, id, workspace_id FROM event
"""


_DESTINATION_SQL = f"""
SELECT CASE WHEN {_GONE} THEN {_FALLBACK} ELSE link.destination END AS destination
FROM {Link._meta.db_table} link WHERE link.key = %(key)s
"""


class Followed(NamedTuple):
    """Where a visit goes: the destination (a gone link's fallback), the new click id or None, and the metric's
    outcome: recorded (a click id), limited (past the click limit) or gone (a deleted or expired link's fallback)."""

    destination: str
    click_id: str | None
    outcome: str


def click_follow(*, key: str, user_agent: str, referrer: str, is_bot: bool, client: str) -> Followed | None:
    """Record a click of the link `key` by `client` (an address): where it goes (no click id past the click limit
    or for a gone link, when nothing is recorded), or None for no such link (nor fallback).

    The click is committed before this returns, in one statement with the clicks of the requests that
    wait at the same time in this process (lftrack/batching.py). Raises Abandoned when it could not be
    written within REDIRECT_DEADLINE.
    """
    user_agent, referrer = _clean(user_agent, 512), _clean(referrer, 2048)
    device, browser, os = user_agent_describe(user_agent, is_bot)
    # The place once per click, in memory (clicks/geo.py); the UTM fields come from the link in the statement.
    visit = _Visit(
        key,
        new_click_id(),
        user_agent,
        referrer,
        is_bot,
        device,
        browser,
        os,
        referrer_domain(referrer),
        country_of(client),
        city_of(client),
        client,
    )
    return _visits.submit(visit, timeout=settings.REDIRECT_DEADLINE or None)


def _visits_record(visits: Sequence[_Visit]) -> list[Followed | None]:
    """click_follow's answers for a batch of visits: one Redis round trip counts them all against the click
    limit, one statement looks their links up and records the clicks within it."""
    over = limit_exceeded(CLICKS_PER_IP, [visit.client for visit in visits])
    params: list[object] = []
    for visit, past in zip(visits, over, strict=True):
        params.extend(_visit_values(visit))
        params.append(not past)  # recorded
    with prepared_cursor(numbered=True) as cursor:
        cursor.execute(_follow_sql(len(visits)), params)
        rows = cursor.fetchall()
    destinations = {row.n: (row.destination, row.gone) for row in rows if row.n is not None}
    events: list[tuple[int, int, int | None]] = [
        (row.event_id, row.workspace_id, None) for row in rows if row.n is None
    ]
    if events:  # committed with their clicks (autocommit); the sweeper dispatches them if this fails
        try:
            events_queue(events)
        except DatabaseError as exc:
            logger.warning("click.created dispatch not queued, left to the sweeper (%s)", type(exc).__name__)
    return [
        _answer(destinations.get(n), visit, past)
        for n, (visit, past) in enumerate(zip(visits, over, strict=True), start=1)
    ]


def _answer(found: tuple[str | None, bool] | None, visit: _Visit, past: bool) -> Followed | None:
    """click_follow's answer: a gone link's visit goes to its fallback, if any, without a click id (none was made)."""
    destination, gone = found if found is not None else (None, True)
    if destination is None:
        return None
    if gone:
        return Followed(destination, None, "gone")
    return Followed(destination, None, "limited") if past else Followed(destination, visit.click_id, "recorded")


# One statement per batch size, prepared as each size first occurs. 16 at most: PostgreSQL's CPU per click
# falls from 187 µs alone to 44 µs in 16, and rises again in 32 (docs/benchmarks.md, "Group commit").
_visits = Batcher(_visits_record, max_batch=16)


def link_destination(key: str) -> str | None:
    """The destination of the link `key`, recording nothing (a HEAD): a gone link's fallback, if any."""
    with prepared_cursor() as cursor:
        cursor.execute(_DESTINATION_SQL, {"key": key})
        row = cursor.fetchone()
    return None if row is None else row.destination


def _clean(value: str, limit: int) -> str:
    return value.replace("\x00", "")[:limit]
