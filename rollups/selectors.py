"""The numbers of links, posts and campaigns: rolled-up totals plus the live tail, and the registry of link numbers.

Exact at every moment and a handful of index lookups per row, however big the tables grow
(docs/benchmarks.md, "Data growth"). Every link number is declared once, in LINK_NUMBERS, and every table
they come from once, in SOURCES: the annotations below, the back office's columns, the roll-up statements
(rollups/services.py) and the numbers of any range of days (`daily_numbers`) are made from them, so a new
number is a column of the totals (and its migration) plus one entry here.
"""

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from django.db import models
from django.db.models import Count, F, OuterRef, QuerySet, Subquery, Sum
from django.db.models.expressions import CombinedExpression
from django.db.models.functions import Coalesce

from campaigns.models import CampaignLead, CampaignPost
from clicks.models import Click, Link
from conversions.models import ConversionEvent, Refund
from lftrack.db import sql_cursor
from rollups.models import (
    CampaignNumberDelta,
    CampaignTotals,
    DailyBreakdowns,
    DailyClickKinds,
    DailyStepSends,
    DailyTotals,
    LinkTotals,
    Watermark,
    WorkspaceBreakdowns,
)


@dataclass(frozen=True)
class Source:
    """An append-only table of rows carrying `link` and `workspace`, rolled up into the link totals.

    SQL fragments name the table's row `x`; they are constants, never input.
    """

    model: type[models.Model]
    counted: dict  # column = value: the rows that count at all (people's clicks, live-mode events)
    moment: str  # the column whose UTC day a row counts on
    currency: str  # the row's currency key: '' for rows without money
    click_join: str = ""  # joins that bring the row's click `c` (none for a click: it is `x`)

    @property
    def click(self) -> str:
        return "c" if self.click_join else "x"

    @property
    def table(self) -> str:
        return self.model._meta.db_table

    @property
    def day(self) -> str:
        return f"(x.{self.moment} AT TIME ZONE 'UTC')::date"

    @property
    def where(self) -> str:
        return _matching(self.counted) or "TRUE"


def _matching(conditions: dict) -> str:
    """`x.column = value AND ...`: the registry's own constants, not input."""

    def literal(value: object) -> str:
        return ("TRUE" if value else "FALSE") if isinstance(value, bool) else f"'{value}'"

    return " AND ".join(f"x.{column} = {literal(value)}" for column, value in conditions.items())


_CLICKS = Click._meta.db_table
SOURCES = {
    Click: Source(Click, {"is_bot": False}, "created_at", "''"),  # people only (clicks/bots.py)
    ConversionEvent: Source(
        ConversionEvent,
        {"is_test": False},
        "occurred_at",
        "CASE WHEN x.event = 'sale' THEN x.currency ELSE '' END",
        f" JOIN {_CLICKS} c ON c.id = x.click_id",
    ),
    Refund: Source(  # on the sale's day, by the sale's click
        Refund,
        {"is_test": False},
        "sale_occurred_at",
        "x.currency",
        f" JOIN {ConversionEvent._meta.db_table} e ON e.id = x.conversion_id JOIN {_CLICKS} c ON c.id = e.click_id",
    ),
}

# What numbers break down by besides the link's own groups: a click's dimensions, as SQL on the click `{c}` (a
# conversion and a refund by their click's), each rolled up into DailyBreakdowns and WorkspaceBreakdowns under its
# value ('' for none).
BREAKDOWNS = {
    "country": "{c}.country",
    "utm_source": "{c}.utm_source",
    "utm_medium": "{c}.utm_medium",
    "utm_campaign": "{c}.utm_campaign",
}


def breakdown_values(source: Source) -> str:
    """`source`'s row `x` with its click, as one row (dimension, value) per breakdown: `d`, after the click's joins.
    The roll-up counts each row of `x` once per dimension."""
    values = ", ".join(f"('{name}', {sql.format(c=source.click)})" for name, sql in BREAKDOWNS.items())
    return f"{source.click_join} CROSS JOIN LATERAL (VALUES {values}) AS d(dimension, value)"


@dataclass(frozen=True)
class LinkNumber:
    """A per-link number: COUNT(*) (or SUM(`summed`)) of `source`'s counted rows matching `where`."""

    name: str  # the totals' column, the annotation `n_<name>` and the column heading
    source: type[models.Model]  # a key of SOURCES
    where: dict[str, str]  # column = value, on the source rows
    summed: str | None = None
    money: bool = False  # in the minor unit of the row's currency: never summed across currencies
    label: str = ""  # the column heading, when not the name

    @property
    def annotation(self) -> str:
        return f"n_{self.name}"

    @property
    def heading(self) -> str:
        return self.label or self.name

    def rows(self) -> QuerySet:
        return self.source._default_manager.filter(**SOURCES[self.source].counted, **self.where)

    def sql(self) -> str:
        """Its value over a group of the source's counted rows `x`."""
        where = _matching(self.where)
        if self.summed:
            value = f"SUM(x.{self.summed})" + (f" FILTER (WHERE {where})" if where else "")
            return f"COALESCE({value}, 0)"
        return "COUNT(*)" + (f" FILTER (WHERE {where})" if where else "")


LINK_NUMBERS = (
    LinkNumber("clicks", Click, {}),
    LinkNumber("leads", ConversionEvent, {"event": ConversionEvent.Event.LEAD}),
    LinkNumber("sales", ConversionEvent, {"event": ConversionEvent.Event.SALE}),
    LinkNumber(
        "revenue_cents",
        ConversionEvent,
        {"event": ConversionEvent.Event.SALE},
        summed="value_cents",
        money=True,
        label="gross",
    ),
    LinkNumber("refunded_cents", Refund, {}, summed="amount_cents", money=True, label="refunded"),
)
COUNTS = [number for number in LINK_NUMBERS if not number.money]
MONEY = [number for number in LINK_NUMBERS if number.money]


def watermark(model: type[models.Model]) -> Coalesce:
    """The id up to which `model`'s rows are in the totals (0 before the first roll-up)."""
    mark = Watermark.objects.filter(source=model._meta.db_table).values("last_id")[:1]
    return Coalesce(Subquery(mark, output_field=models.BigIntegerField()), 0)


def tail(queryset: QuerySet) -> QuerySet:
    """The rows not yet in the totals; served by an index on (parent, id): (link, id), (campaign, id)."""
    return queryset.filter(pk__gt=watermark(queryset.model))


def count_of(queryset: QuerySet, group: str) -> Coalesce:
    """A correlated COUNT(*) subquery: `queryset` filtered on OuterRef and grouped by that same column."""
    rows = queryset.order_by().values(group).annotate(n=Count("*")).values("n")
    return Coalesce(Subquery(rows, output_field=models.BigIntegerField()), 0)


def sum_of(queryset: QuerySet, group: str, field: str) -> Coalesce:
    """A correlated SUM(field) subquery, 0 when no row matches."""
    rows = queryset.order_by().values(group).annotate(total=Sum(field)).values("total")
    return Coalesce(Subquery(rows, output_field=models.BigIntegerField()), 0)


def _live(number: LinkNumber, group: str) -> Coalesce:
    rows = tail(number.rows().filter(**{group: OuterRef("pk")}))
    return sum_of(rows, group, number.summed) if number.summed else count_of(rows, group)


def links_with_numbers(*, links: QuerySet) -> QuerySet:
    """`links` annotated with the counts of LINK_NUMBERS (`n_clicks`, `n_leads`, `n_sales`); the money, per
    currency, comes from `money_of_links`."""
    totals = LinkTotals.objects.filter(link=OuterRef("pk"))
    return links.annotate(
        **{number.annotation: sum_of(totals, "link", number.name) + _live(number, "link") for number in COUNTS}
    )


def posts_with_numbers(*, posts: QuerySet) -> QuerySet:
    """`posts` annotated with `n_links` and the sum over their links of the counts of LINK_NUMBERS; the money,
    per currency, comes from `money_of_posts`."""
    totals = LinkTotals.objects.filter(link__post=OuterRef("pk"))
    return posts.annotate(
        n_links=count_of(Link.objects.filter(post=OuterRef("pk")), "post"),
        **{
            number.annotation: sum_of(totals, "link__post", number.name) + _live(number, "link__post")
            for number in COUNTS
        },
    )


def _total(totals: QuerySet, field: str) -> Coalesce:
    """One totals row's `field` (totals are keyed by the outer row), 0 when it has none yet."""
    return Coalesce(Subquery(totals.values(field)[:1], output_field=models.BigIntegerField()), 0)


def campaigns_with_numbers(*, campaigns: QuerySet) -> QuerySet:
    """Leads above the watermark of campaigns_campaignlead, state changes logged above the watermark of the
    delta log, each added to its rolled-up total: `n_leads`, `n_active`, `n_stopped`, `n_completed`,
    `n_enrollments`, `n_sends`, `n_unsubscribes`, `n_complaints`."""
    totals = CampaignTotals.objects.filter(campaign=OuterRef("pk"))
    deltas = tail(CampaignNumberDelta.objects.filter(campaign=OuterRef("pk")))

    def number(field: str) -> CombinedExpression:
        return _total(totals, field) + sum_of(deltas, "campaign", field)

    return campaigns.annotate(
        n_leads=_total(totals, "leads")
        + count_of(tail(CampaignLead.objects.filter(campaign=OuterRef("pk"))), "campaign"),
        n_active=number("enrollments_active"),
        n_stopped=number("enrollments_stopped"),
        n_completed=number("enrollments_completed"),
        n_enrollments=F("n_active") + F("n_stopped") + F("n_completed"),
        n_sends=number("sends"),
        n_unsubscribes=number("unsubscribes"),
        n_complaints=number("complaints"),
    )


_DELTAS = CampaignNumberDelta._meta.db_table
_STEP_SENDS_SQL = f"""
SELECT position, CASE WHEN day >= %(since)s THEN day END AS day, SUM(sent)::bigint AS sent,
    SUM(failed)::bigint AS failed FROM (
    SELECT position, day, sent, failed FROM {DailyStepSends._meta.db_table} WHERE campaign_id = %(campaign)s
    UNION ALL
    SELECT position, day, sends, failed FROM {_DELTAS} WHERE campaign_id = %(campaign)s AND position IS NOT NULL
        AND id > (SELECT COALESCE(MAX(last_id), 0) FROM {Watermark._meta.db_table} WHERE source = '{_DELTAS}')
) s GROUP BY 1, 2
"""


def campaign_step_sends(*, campaign_id: int, since: date) -> dict:
    """Per step of the campaign's sequence (by position): emails sent and failed of all time, and sent per UTC day
    of `sent_at` from `since` on: {"steps": {position: {"sent": n, "failed": n}}, "days": {(day, position): n}}.
    Exact at this moment: the daily roll-up plus the delta log's send rows above its watermark, one statement
    through the (campaign, position, day) and (campaign, id) indexes, a row per step and day however many
    emails went (docs/benchmarks.md, "The campaign funnel")."""
    steps: dict[int, dict[str, int]] = {}
    days: dict[tuple[date, int], int] = {}
    with sql_cursor() as cursor:
        cursor.execute(_STEP_SENDS_SQL, {"campaign": campaign_id, "since": since})
        for row in cursor.fetchall():
            step = steps.setdefault(row.position, {"sent": 0, "failed": 0})
            step["sent"] += row.sent
            step["failed"] += row.failed
            if row.day is not None and row.sent:
                days[(row.day, row.position)] = row.sent
    return {"steps": steps, "days": days}


# ---------------------------------------------------------------------------------------------
# Numbers per group and currency: totals rows plus every source's tail, in one statement.

_WORKSPACE = "x.workspace_id = %(workspace)s"  # the scope of a workspace's numbers, no link, post or campaign named
# Tag: a link's tags, as they are now (many per link): a row counts under each tag of its link, None if it has none.
GROUPS = ("day", "link", "post", "campaign", *BREAKDOWNS, "tag")
_COLUMNS = [number.name for number in LINK_NUMBERS]
_KEYS = {"link": "x.link_id", "post": "l.post_id", "campaign": "cp.campaign_id", "tag": "lt.tag_id"}
_LINK_TAGS = Link.tags.through._meta.db_table


def _joins(*, group: str, scope: str) -> str:
    """The row's link `l` and its campaign post `cp`, when the group key or the scope reads them, and its link's
    tags `lt` for the tag group: a workspace's numbers per day, link or click dimension read the totals alone (tens
    of thousands of rows, no join per row)."""
    campaign = group == "campaign" or "cp." in scope
    link = campaign or group == "post" or "l." in scope
    return (
        (f" JOIN {Link._meta.db_table} l ON l.id = x.link_id" if link else "")
        + (f" LEFT JOIN {CampaignPost._meta.db_table} cp ON cp.post_id = l.post_id" if campaign else "")
        + (f" LEFT JOIN {_LINK_TAGS} lt ON lt.link_id = x.link_id" if group == "tag" else "")
    )


def _grouped_sql(*, totals: type[models.Model], group: str, scope: str, days: bool) -> str:
    """(key, currency, *LINK_NUMBERS) per group and currency: the rows of `totals` plus the rows of each source
    above its watermark. One statement, so one snapshot: the totals and the watermarks agree.

    `scope` is SQL on the row `x` (workspace_id, link_id), its link `l` and the link's campaign post `cp` (joined
    only when read). A click dimension (BREAKDOWNS) reads the rows of that dimension of WorkspaceBreakdowns (the
    whole workspace: `scope` is _WORKSPACE) or DailyBreakdowns instead of `totals` (daily only), and each source's
    rows by their click.
    A tail is `x.id > %(mark_<table>)s AND x.id > (its watermark)`: the literal, read just before, lets the
    planner see that the tail is a few rows at the end of the primary key (a watermark read inside the
    statement is unknown when it plans, and a workspace of millions of rows would be scanned); the
    subquery keeps the count exact if a roll-up committed in between.
    """
    sums = ", ".join(f"SUM(x.{column}) AS {column}" for column in _COLUMNS)
    joins = _joins(group=group, scope=scope)
    if group in BREAKDOWNS:
        if not days:
            raise ValueError("click dimensions are rolled up per day only")
        # A workspace's numbers read its own rows; narrowed to links, posts or a campaign, the links' rows.
        breakdowns = WorkspaceBreakdowns if scope == _WORKSPACE else DailyBreakdowns
        table, key, only = breakdowns._meta.db_table, "x.value", f" AND x.dimension = '{group}'"
    else:
        table, key, only = totals._meta.db_table, "x.day" if group == "day" else _KEYS[group], ""
    parts = [
        f"SELECT {key} AS key, x.currency, {sums}"
        f" FROM {table} x{joins} WHERE {scope}{only}"
        + (" AND x.day >= %(since)s AND x.day <= %(until)s" if days else "")
        + " GROUP BY 1, 2"
    ]
    for source in SOURCES.values():
        values = ", ".join(number.sql() if number.source is source.model else "0" for number in LINK_NUMBERS)
        mark = f"(SELECT COALESCE(MAX(last_id), 0) FROM {Watermark._meta.db_table} WHERE source = '{source.table}')"
        if group in BREAKDOWNS:
            key, click = BREAKDOWNS[group].format(c=source.click), source.click_join
        else:
            key, click = source.day if group == "day" else _KEYS[group], ""
        parts.append(
            f"SELECT {key}, {source.currency}, {values}"
            f" FROM {source.table} x{joins}{click} WHERE {scope} AND {source.where}"
            f" AND x.id > %(mark_{source.table})s AND x.id > {mark}"
            + (f" AND x.{source.moment} >= %(start)s AND x.{source.moment} < %(end)s" if days else "")
            + " GROUP BY 1, 2"
        )
    # Money summed in numeric (no cast back): a workspace's total of many links may pass bigint, and its reader
    # gets the figure, not an error (rollups/models.py, Numbers).
    sums = ", ".join(
        f"SUM({number.name})" + ("" if number.money else "::bigint") + f" AS {number.name}" for number in LINK_NUMBERS
    )
    return f"""SELECT key, currency, {sums} FROM ({" UNION ALL ".join(parts)}) n GROUP BY 1, 2"""


def _grouped(
    *, totals: type[models.Model], group: str, scope: str, params: dict, days: bool, hints: bool = True
) -> dict:
    """{key: [(currency, {column: value}), ...]} from `_grouped_sql`; `hints`: read the watermarks first, for
    the planner (without, the literal is 0 and the watermark subquery alone bounds each tail)."""
    marks = dict(Watermark.objects.values_list("source", "last_id")) if hints else {}
    params = {**params, **{f"mark_{source.table}": marks.get(source.table, 0) for source in SOURCES.values()}}
    with sql_cursor() as cursor:
        cursor.execute(_grouped_sql(totals=totals, group=group, scope=scope, days=days), params)
        rows = cursor.fetchall()
    groups: dict = {}
    for row in rows:
        groups.setdefault(row.key, []).append(
            (row.currency, {column: int(getattr(row, column)) for column in _COLUMNS})
        )
    return groups


def numbers_of(rows: list[tuple[str, dict]]) -> dict:
    """{"clicks", "leads", "sales", "revenue": [{"currency", "sales", "gross_cents", "refunded_cents",
    "net_cents"}, ...]} from (currency, {column: value}) rows: the counts of all currencies together, the money
    per currency (sorted by it), never added across currencies."""
    numbers = {number.name: 0 for number in COUNTS}
    money: dict[str, dict] = {}
    for currency, values in rows:
        for number in COUNTS:
            numbers[number.name] += values[number.name]
        if currency:
            entry = money.setdefault(
                currency, {"currency": currency, "sales": 0, "gross_cents": 0, "refunded_cents": 0}
            )
            entry["sales"] += values["sales"]
            entry["gross_cents"] += values["revenue_cents"]
            entry["refunded_cents"] += values["refunded_cents"]
    revenue = [
        {**entry, "net_cents": entry["gross_cents"] - entry["refunded_cents"]} for _, entry in sorted(money.items())
    ]
    return {**numbers, "revenue": revenue}


def _link_scope(*, link_ids: list[int] | None, post_ids: list[int] | None, campaign_ids: list[int] | None) -> str:
    return "".join(
        f" AND {column} = ANY(%({name})s)"
        for column, name, ids in (
            ("x.link_id", "link_ids", link_ids),
            ("l.post_id", "post_ids", post_ids),
            ("cp.campaign_id", "campaign_ids", campaign_ids),
        )
        if ids is not None
    )


def day_bounds(since: date, until: date) -> tuple[datetime, datetime]:
    """The UTC moments [start, end) of the days `since` to `until`, both included: the live tail's time filter."""
    return (
        datetime.combine(since, time.min, tzinfo=UTC),
        datetime.combine(until + timedelta(days=1), time.min, tzinfo=UTC),
    )


def daily_numbers(
    *,
    workspace_id: int,
    since: date,
    until: date,
    link_ids: list[int] | None = None,
    post_ids: list[int] | None = None,
    campaign_ids: list[int] | None = None,
    group_by: str = "day",
) -> dict:
    """The workspace's numbers over the UTC days `since` to `until` (both included), exact at this moment:
    the daily totals plus the rows not yet rolled up. Bot clicks and test-mode data are never counted; a
    sale's refunds count on the sale's day. `link_ids`, `post_ids`, `campaign_ids` (a post's current
    campaign) narrow to those links, ANDed together; None means all.

    Returns {"total": numbers, "groups": [{"key": ..., **numbers}, ...]} where numbers is
    {"clicks", "leads", "sales", "revenue": [{"currency", "sales", "gross_cents", "refunded_cents",
    "net_cents"}, ...]} (revenue sorted by currency; counts are of all currencies). Groups by `group_by`:
    "day" gives every day of the range in order, zeros included, keyed by a `date`; "link", "post",
    "campaign" and "tag" give only those with numbers, keyed by id (campaign None: links whose post is in none;
    tag None: links without tags; a link's numbers count under each of its tags); "country", "utm_source",
    "utm_medium" and "utm_campaign" (BREAKDOWNS) by the click's value, '' for none; most clicks first, then most
    leads, then by key.
    """
    if group_by not in GROUPS:
        raise ValueError(f"group_by must be one of {', '.join(GROUPS)}")
    start, end = day_bounds(since, until)
    groups = _grouped(
        totals=DailyTotals,
        group=group_by,
        scope=_WORKSPACE + _link_scope(link_ids=link_ids, post_ids=post_ids, campaign_ids=campaign_ids),
        params={
            "workspace": workspace_id,
            "since": since,
            "until": until,
            "start": start,
            "end": end,
            "link_ids": link_ids,
            "post_ids": post_ids,
            "campaign_ids": campaign_ids,
        },
        days=True,
    )
    numbers = {key: numbers_of(rows) for key, rows in groups.items()}
    if group_by == "day":
        keys = [since + timedelta(days=n) for n in range((until - since).days + 1)]
    else:
        keys = sorted(
            numbers, key=lambda key: (-numbers[key]["clicks"], -numbers[key]["leads"], key in (None, ""), key or 0)
        )
    if group_by == "tag":  # a link of several tags counts under each: the total is the links' own, read apart
        total = daily_numbers(
            workspace_id=workspace_id,
            since=since,
            until=until,
            link_ids=link_ids,
            post_ids=post_ids,
            campaign_ids=campaign_ids,
            group_by="link",
        )["total"]
    else:
        total = numbers_of([row for rows in groups.values() for row in rows])
    return {
        "total": total,
        "groups": [{"key": key, **numbers.get(key, numbers_of([]))} for key in keys],
    }


def money_of(
    *, group: str, link_ids: list[int] | None = None, post_ids: list[int] | None = None
) -> dict[int, list[dict]]:
    """The revenue of all time per currency of each link (`group` "link") or post (its links together) of the
    links or posts named, by id: the `revenue` of `numbers_of`; absent when it has none. The back office's
    lists: a page of them in one statement (a link's tail is its (link, id) index: no watermark hint needed)."""
    scope = " AND ".join(
        f"{column} = ANY(%({name})s)"
        for column, name, ids in (("x.link_id", "link_ids", link_ids), ("l.post_id", "post_ids", post_ids))
        if ids is not None
    )
    if not (link_ids or post_ids):
        return {}
    params = {"link_ids": link_ids, "post_ids": post_ids}
    groups = _grouped(totals=LinkTotals, group=group, scope=scope, params=params, days=False, hints=False)
    return {pk: numbers_of(rows)["revenue"] for pk, rows in groups.items()}


# ---------------------------------------------------------------------------------------------
# Clicks by device, browser and referrer domain over a range of days: the dashboard's breakdowns.

# A click's three kinds as rows (kind, value) of the click `x`: the roll-up and the tail count them the same way.
CLICK_KINDS = (
    "CROSS JOIN LATERAL (VALUES ('device', x.device), ('browser', x.browser),"
    " ('referrer', x.referrer_domain)) AS k(kind, value)"
)


def _click_kinds_sql(*, scope: str) -> str:
    """(kind, value, clicks) over a range of days, most clicks first: the daily roll-up plus the clicks above the
    watermark; `scope` as _grouped_sql's."""
    clicks = SOURCES[Click]
    mark = f"(SELECT COALESCE(MAX(last_id), 0) FROM {Watermark._meta.db_table} WHERE source = '{clicks.table}')"
    joins = _joins(group="link", scope=scope)  # the link and its campaign post, when a filter reads them
    return f"""SELECT kind, value, SUM(n)::bigint AS clicks FROM (
    SELECT x.kind, x.value, SUM(x.clicks) AS n FROM {DailyClickKinds._meta.db_table} x{joins}
    WHERE {scope} AND x.day >= %(since)s AND x.day <= %(until)s GROUP BY 1, 2
    UNION ALL
    SELECT k.kind, k.value, COUNT(*) FROM {clicks.table} x{joins} {CLICK_KINDS}
    WHERE {scope} AND {clicks.where} AND x.id > %(mark)s AND x.id > {mark}
    AND x.created_at >= %(start)s AND x.created_at < %(end)s GROUP BY 1, 2
) n GROUP BY 1, 2 ORDER BY 3 DESC, 2"""


def click_kinds(
    *,
    workspace_id: int,
    since: date,
    until: date,
    link_ids: list[int] | None = None,
    post_ids: list[int] | None = None,
    campaign_ids: list[int] | None = None,
) -> dict[str, list[tuple[str, int]]]:
    """People's clicks over the UTC days `since` to `until` (both included) by device type, browser and referrer
    domain, each kind's values most clicks first: {"device": [("mobile", 120), ...], "browser": [...],
    "referrer": [("", 40), ("t.co", 12), ...]} ('' where a click said nothing). The daily roll-up plus the clicks
    above the watermark, in one statement; the filters as daily_numbers takes them."""
    clicks = SOURCES[Click]
    scope = "x.workspace_id = %(workspace)s" + _link_scope(
        link_ids=link_ids, post_ids=post_ids, campaign_ids=campaign_ids
    )
    params = {
        "workspace": workspace_id,
        "since": since,
        "until": until,
        **dict(zip(("start", "end"), day_bounds(since, until), strict=True)),
        "link_ids": link_ids,
        "post_ids": post_ids,
        "campaign_ids": campaign_ids,
        # A literal for the planner, as in _grouped_sql: the tail is a few rows at the end of the primary key.
        "mark": Watermark.objects.filter(source=clicks.table).values_list("last_id", flat=True).first() or 0,
    }
    found: dict[str, list[tuple[str, int]]] = {kind: [] for kind in DailyClickKinds.Kind.values}
    with sql_cursor() as cursor:
        cursor.execute(_click_kinds_sql(scope=scope), params)
        for row in cursor.fetchall():
            found[row.kind].append((row.value, row.clicks))
    return found


def link_numbers(*, link_id: int) -> dict:
    """One link's numbers of all time (`numbers_of`): its totals rows plus its tail, in one statement (the API's link)."""
    groups = _grouped(
        totals=LinkTotals,
        group="link",
        scope="x.link_id = %(link_id)s",
        params={"link_id": link_id},
        days=False,
        hints=False,
    )
    return numbers_of(groups.get(link_id, []))
