"""numbers_roll_up: add the rows above each source table's watermark into the per-link and per-campaign totals.

Clicks, conversion events, refunds and campaign leads are append-only (deleted only with their link,
campaign or workspace, whose totals go with them, or as test-mode data, which is never counted), so a total plus the rows above the watermark is an exact
count at every moment; their write paths stay as they are: no trigger, no counter row, no extra statement.
Enrollments, sends and suppressions change state: triggers (migrations 0003, 0007) log each change of a
campaign's numbers in the same statement as an append-only row of CampaignNumberDelta, rolled up the same way
(the sends' rows into the campaign totals and, per step and UTC day, into DailyStepSends).
"""

import logging
import time

from django.db import DatabaseError, DataError, IntegrityError, connection, models, transaction
from django.utils import timezone

from campaigns.models import Campaign, CampaignLead, EmailSend, Enrollment, Suppression
from clicks.models import Click
from customers.models import Customer
from lftrack.db import sql_cursor
from lftrack.errors import Unprocessable
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
from rollups.selectors import CLICK_KINDS, LINK_NUMBERS, SOURCES, Source, breakdown_values

WRITER_WAIT_SECONDS = 10.0
logger = logging.getLogger("lftrack.rollups")

_CAMPAIGNS = CampaignTotals._meta.db_table
_DELTAS = CampaignNumberDelta._meta.db_table
_STEPS = DailyStepSends._meta.db_table
_NUMBERS = ["enrollments_active", "enrollments_stopped", "enrollments_completed", "sends", "complaints", "unsubscribes"]


# The rows a statement adds: ids in (after, upto]; narrowed, those of some links or campaigns (%(units)s) only.
_RANGE = "x.id > %(after)s AND x.id <= %(upto)s"
# What each source's rows are added up per, and narrowed by when a statement fails: the link or the campaign.
_UNITS = {
    **dict.fromkeys(SOURCES, "x.link_id"),
    CampaignLead: "x.campaign_id",
    CampaignNumberDelta: "x.campaign_id",
}


def _link_add_sql(source: Source, totals: type[models.Model], rows: str) -> str:
    """The statement that adds `source`'s counted `rows` to `totals` (LinkTotals, or DailyTotals by the rows' UTC
    day), per link and currency: its numbers of LINK_NUMBERS in their columns."""
    keys = ["link_id", *(["day"] if totals is DailyTotals else []), "currency"]
    exprs = ["x.link_id", *([source.day] if totals is DailyTotals else []), source.currency]
    mine = [number for number in LINK_NUMBERS if number.source is source.model]
    table = totals._meta.db_table
    return (
        f"INSERT INTO {table} (workspace_id, {', '.join(keys)}, {', '.join(number.name for number in mine)})"
        f" SELECT MIN(x.workspace_id), {', '.join(exprs)}, {', '.join(number.sql() for number in mine)}"
        f" FROM {source.table} x WHERE {rows} AND {source.where}"
        f" GROUP BY {', '.join(str(n) for n in range(2, len(keys) + 2))}"
        f" ON CONFLICT ({', '.join(keys)}) DO UPDATE SET"
        f" {', '.join(f'{n.name} = {table}.{n.name} + excluded.{n.name}' for n in mine)}"
    )


def _breakdowns_add_sql(source: Source, totals: type[models.Model], rows: str) -> str:
    """The statement that adds `source`'s counted `rows` to DailyBreakdowns (per link) or WorkspaceBreakdowns: per
    UTC day, click dimension and value (the row's click's: rollups/selectors.py, BREAKDOWNS) and currency, each row
    once per dimension."""
    mine = [number for number in LINK_NUMBERS if number.source is source.model]
    table = totals._meta.db_table
    if totals is DailyBreakdowns:
        columns, keys = (
            "workspace_id, link_id, day, dimension, value, currency",
            "link_id, day, dimension, value, currency",
        )
        owner, groups = "MIN(x.workspace_id), x.link_id", "2, 3, 4, 5, 6"
    else:
        columns = keys = "workspace_id, day, dimension, value, currency"
        owner, groups = "x.workspace_id", "1, 2, 3, 4, 5"
    return (
        f"INSERT INTO {table} ({columns}, {', '.join(number.name for number in mine)})"
        f" SELECT {owner}, {source.day}, d.dimension, d.value, {source.currency},"
        f" {', '.join(number.sql() for number in mine)}"
        f" FROM {source.table} x{breakdown_values(source)} WHERE {rows} AND {source.where}"
        f" GROUP BY {groups}"
        f" ON CONFLICT ({keys}) DO UPDATE SET"
        f" {', '.join(f'{n.name} = {table}.{n.name} + excluded.{n.name}' for n in mine)}"
    )


def _add_sql(model: type[models.Model], *, narrowed: bool) -> list[str]:
    """The set-based statements that add `model`'s rows in (after, upto] (`narrowed`: of the units in %(units)s)
    into the totals, grouped per link (and day) and currency, or per campaign. MIN(workspace_id): a link's rows
    all carry its workspace."""
    rows = _RANGE + (f" AND {_UNITS[model]} = ANY(%(units)s)" if narrowed else "")
    if model in SOURCES:
        source = SOURCES[model]
        statements = [_link_add_sql(source, totals, rows) for totals in (LinkTotals, DailyTotals)]
        statements += [_breakdowns_add_sql(source, totals, rows) for totals in (DailyBreakdowns, WorkspaceBreakdowns)]
        if (
            model is Click
        ):  # the dashboard's breakdowns: each click once per kind (device, browser, referrer) and UTC day
            kinds = DailyClickKinds._meta.db_table
            statements.append(
                f"INSERT INTO {kinds} (workspace_id, link_id, day, kind, value, clicks)"
                f" SELECT MIN(x.workspace_id), x.link_id, {source.day}, k.kind, k.value, COUNT(*)"
                f" FROM {source.table} x {CLICK_KINDS} WHERE {rows} AND {source.where} GROUP BY 2, 3, 4, 5"
                f" ON CONFLICT (link_id, day, kind, value) DO UPDATE SET clicks = {kinds}.clicks + excluded.clicks"
            )
        return statements
    if model is CampaignLead:
        return [
            f"INSERT INTO {_CAMPAIGNS} (campaign_id, workspace_id, leads)"
            f" SELECT x.campaign_id, MIN(x.workspace_id), COUNT(*) FROM {CampaignLead._meta.db_table} x"
            f" WHERE {rows} GROUP BY x.campaign_id"
            f" ON CONFLICT (campaign_id) DO UPDATE SET leads = {_CAMPAIGNS}.leads + excluded.leads"
        ]
    # The join skips the deltas of campaigns deleted since (the log has no foreign key).
    return [
        f"INSERT INTO {_CAMPAIGNS} (campaign_id, workspace_id, leads, {', '.join(_NUMBERS)})"
        f" SELECT x.campaign_id, MIN(c.workspace_id), 0, {', '.join(f'SUM(x.{n})' for n in _NUMBERS)}"
        f" FROM {_DELTAS} x JOIN {Campaign._meta.db_table} c ON c.id = x.campaign_id"
        f" WHERE {rows} GROUP BY x.campaign_id"
        f" ON CONFLICT (campaign_id) DO UPDATE SET {', '.join(f'{n} = {_CAMPAIGNS}.{n} + excluded.{n}' for n in _NUMBERS)}",
        # The sends' rows also per step and UTC day (migration 0007): the campaign page's funnel.
        f"INSERT INTO {_STEPS} (campaign_id, position, day, sent, failed)"
        f" SELECT x.campaign_id, x.position, x.day, SUM(x.sends), SUM(x.failed)"
        f" FROM {_DELTAS} x JOIN {Campaign._meta.db_table} c ON c.id = x.campaign_id"
        f" WHERE {rows} AND x.position IS NOT NULL GROUP BY 1, 2, 3"
        f" ON CONFLICT (campaign_id, position, day) DO UPDATE SET sent = {_STEPS}.sent + excluded.sent,"
        f" failed = {_STEPS}.failed + excluded.failed",
    ]


def _units_sql(model: type[models.Model]) -> str:
    """The units (links or campaigns) with rows in (after, upto], each with its workspace (None: a campaign gone)."""
    if model is CampaignNumberDelta:
        return f"""SELECT x.campaign_id AS unit, MIN(c.workspace_id) AS workspace_id FROM {_DELTAS} x
    LEFT JOIN {Campaign._meta.db_table} c ON c.id = x.campaign_id WHERE {_RANGE} GROUP BY 1"""
    return f"""SELECT {_UNITS[model]} AS unit, MIN(x.workspace_id) AS workspace_id FROM {model._meta.db_table} x
    WHERE {_RANGE} GROUP BY 1"""


# The tables rolled up, in the order numbers_roll_up takes them (the roll-up lag gauge reads each: rollups/metrics.py).
ROLLED_UP = tuple(_UNITS)
_ADD_SQL = {model: _add_sql(model, narrowed=False) for model in _UNITS}
_ADD_NARROWED_SQL = {model: _add_sql(model, narrowed=True) for model in _UNITS}
_UNITS_SQL = {model: _units_sql(model) for model in _UNITS}

# Counted from the source tables, for --rebuild: the same numbers the triggers log changes of (test mode's
# enrollments and suppressions left out; a test send is neither sent nor complained of).
_RECOUNT_SQL = f"""
WITH e AS (
    SELECT campaign_id, SUM(CASE WHEN state = 'active' THEN 1 ELSE 0 END) AS active,
        SUM(CASE WHEN state = 'stopped' THEN 1 ELSE 0 END) AS stopped,
        SUM(CASE WHEN state = 'completed' THEN 1 ELSE 0 END) AS completed
    FROM {Enrollment._meta.db_table} WHERE NOT is_test GROUP BY campaign_id
), m AS (
    SELECT campaign_id, SUM(CASE WHEN status = 'sent' THEN 1 ELSE 0 END) AS sends, COUNT(complained_at) AS complaints
    FROM {EmailSend._meta.db_table} GROUP BY campaign_id
), u AS (
    SELECT en.campaign_id, COUNT(*) AS unsubscribes FROM {Enrollment._meta.db_table} en
    JOIN {Customer._meta.db_table} cu ON cu.id = en.customer_id
    JOIN {Suppression._meta.db_table} su ON su.workspace_id = en.workspace_id AND su.email = LOWER(cu.email)
        AND su.reason = 'unsubscribed' AND NOT su.is_test
    WHERE NOT en.is_test
    GROUP BY en.campaign_id
)
INSERT INTO {_CAMPAIGNS} (campaign_id, workspace_id, leads, {", ".join(_NUMBERS)})
SELECT c.id, c.workspace_id, 0, COALESCE(e.active, 0), COALESCE(e.stopped, 0), COALESCE(e.completed, 0),
    COALESCE(m.sends, 0), COALESCE(m.complaints, 0), COALESCE(u.unsubscribes, 0)
FROM {Campaign._meta.db_table} c LEFT JOIN e ON e.campaign_id = c.id LEFT JOIN m ON m.campaign_id = c.id
    LEFT JOIN u ON u.campaign_id = c.id
WHERE TRUE
ON CONFLICT (campaign_id) DO UPDATE SET {", ".join(f"{n} = excluded.{n}" for n in _NUMBERS)}
"""
_STEPS_RECOUNT_SQL = f"""
INSERT INTO {_STEPS} (campaign_id, position, day, sent, failed)
SELECT campaign_id, position, (sent_at AT TIME ZONE 'UTC')::date,
    COUNT(*) FILTER (WHERE status = 'sent'), COUNT(*) FILTER (WHERE status = 'failed')
FROM {EmailSend._meta.db_table} WHERE status IN ('sent', 'failed') GROUP BY 1, 2, 3
"""

# Transactions that may be inserting into the table: every INSERT takes ROW EXCLUSIVE on it before it
# draws an id from the sequence, and keeps it until commit or rollback.
_WRITERS_SQL = """SELECT DISTINCT virtualtransaction FROM pg_locks WHERE locktype = 'relation'
    AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
    AND relation = %(table)s::regclass AND mode = 'RowExclusiveLock' AND pid IS DISTINCT FROM pg_backend_pid()"""
_STILL_OPEN_SQL = """SELECT DISTINCT virtualtransaction FROM pg_locks WHERE virtualtransaction = ANY(%(writers)s)"""


def _max_id_sql(table: str) -> str:
    return f"""SELECT MAX(id) AS top FROM {connection.ops.quote_name(table)}"""


# Foreign keys checked by each statement, not at commit: a link or campaign deleted meanwhile fails the
# statement that added its rows, where it can be left out, not the commit of everyone's.
_CONSTRAINTS_IMMEDIATE_SQL = """SET CONSTRAINTS ALL IMMEDIATE"""
# The campaign numbers' log, up to the watermark: its rows are in the totals.
_LOG_TRIM_SQL = f"""DELETE FROM {_DELTAS} WHERE id <= %(upto)s"""
_DELTAS_LOCK_SQL = f"""LOCK TABLE {_DELTAS} IN SHARE MODE"""
_DELTAS_MAX_ID_SQL = _max_id_sql(_DELTAS)
_STEPS_CLEAR_SQL = f"""DELETE FROM {_STEPS}"""


def settled_max_id(*, table: str, wait_seconds: float) -> int | None:
    """The highest committed id of `table` once no row at or below it can still appear; None if a writer
    stayed open longer than `wait_seconds`.

    Ids are drawn at insert and committed in any order: when id 101 is visible, id 100 may belong to a
    transaction still open. Every id up to the visible maximum was drawn before that maximum was read,
    by a transaction that held ROW EXCLUSIVE from before the draw until its end, so waiting for the
    transactions holding it right after the read settles them all (CREATE INDEX CONCURRENTLY waits
    the same way).
    """
    with sql_cursor() as cursor:
        cursor.execute(_max_id_sql(table))
        top = cursor.fetchone().top or 0
        cursor.execute(_WRITERS_SQL, {"table": table})
        writers = [row.virtualtransaction for row in cursor.fetchall()]
        deadline = time.monotonic() + wait_seconds
        while writers:
            if time.monotonic() > deadline:
                return None
            time.sleep(0.005)
            cursor.execute(_STILL_OPEN_SQL, {"writers": writers})
            writers = [row.virtualtransaction for row in cursor.fetchall()]
    return top


@transaction.atomic
def source_roll_up(*, model: type[models.Model], wait_seconds: float) -> int | None:
    """Adds `model`'s rows above its watermark into the totals and moves the watermark, in one transaction
    (a reader sees both or neither). Concurrent runs queue on the watermark row. Returns the new watermark,
    or None when a writer kept the table open (nothing changes; the next run catches up). Rows that cannot be
    added are left out, link by link or campaign by campaign (`_rows_add`): they never hold up the others."""
    table = model._meta.db_table
    Watermark.objects.bulk_create([Watermark(source=table)], ignore_conflicts=True)
    mark = Watermark.objects.select_for_update().get(source=table)
    top = settled_max_id(table=table, wait_seconds=wait_seconds)
    if top is None:
        return None
    if top > mark.last_id:
        with connection.cursor() as cursor:
            cursor.execute(_CONSTRAINTS_IMMEDIATE_SQL)
        _rows_add(model=model, rows={"after": mark.last_id, "upto": top})
        if model is CampaignNumberDelta:  # a log, not data: its rows are in the totals now
            with connection.cursor() as cursor:
                cursor.execute(_LOG_TRIM_SQL, {"upto": top})
    # Stamped when nothing moved too: rolled_up_at is when the source was last caught up, which the roll-up
    # lag gauge counts from (rollups/metrics.py).
    Watermark.objects.filter(pk=mark.pk).update(last_id=max(top, mark.last_id), rolled_up_at=timezone.now())
    return max(top, mark.last_id)


def _rows_add(*, model: type[models.Model], rows: dict) -> None:
    """Adds `model`'s rows with ids in `rows` ({"after", "upto"}) into the totals. When the set-based statements
    fail on the rows' data (an integrity or data error), they run again per half of the units (links or
    campaigns) those rows belong to, on a fresh snapshot, halving the failing halves down to single units;
    a unit that still fails is left out of the totals and logged, one JSON line per workspace and pass. The
    others' rows go in all the same, and the watermark moves past them all (`roll_up_numbers --rebuild`
    counts the rows left out again, once their cause is mended)."""
    if _added(_ADD_SQL[model], rows) is None:
        return
    with sql_cursor() as cursor:
        cursor.execute(_UNITS_SQL[model], rows)
        workspace_of = {row.unit: row.workspace_id for row in cursor.fetchall()}
    groups, failed = [sorted(workspace_of)], {}
    while groups:
        units = groups.pop()
        error = _added(_ADD_NARROWED_SQL[model], {**rows, "units": units}) if units else None
        if error is not None and len(units) == 1:
            failed[units[0]] = error
        elif error is not None:
            groups += [units[: len(units) // 2], units[len(units) // 2 :]]
    left_out: dict[int | None, list[int]] = {}
    for unit in failed:
        left_out.setdefault(workspace_of[unit], []).append(unit)
    for workspace_id, units in left_out.items():
        cause = failed[units[0]].__cause__
        logger.warning(
            "roll-up left rows out",
            extra={
                "source": model._meta.db_table,
                "workspace_id": workspace_id,
                _UNITS[model].removeprefix("x."): units,
                "after_id": rows["after"],
                "up_to_id": rows["upto"],
                "sqlstate": getattr(cause, "sqlstate", None),
                "error": getattr(getattr(cause, "diag", None), "message_primary", None),
            },
        )


def _added(statements: list[str], params: dict) -> DatabaseError | None:
    """Runs `statements` in a savepoint: None, or the integrity or data error that undid them all."""
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            for statement in statements:
                cursor.execute(statement, params)
    except (DataError, IntegrityError) as error:
        return error
    return None


def numbers_roll_up(*, wait_seconds: float = WRITER_WAIT_SECONDS) -> dict[str, int | None]:
    """Every source in turn, each in its own transaction: `{table: watermark}` (None: not moved this time, because
    a writer stayed open or the source's roll-up failed; a failure is logged and the other sources go on)."""
    result: dict[str, int | None] = {}
    for model in _ADD_SQL:
        table = model._meta.db_table
        try:
            result[table] = source_roll_up(model=model, wait_seconds=wait_seconds)
        except DatabaseError:
            logger.exception("roll-up of a source failed", extra={"source": table})
            result[table] = None
    return result


@transaction.atomic
def numbers_rebuild(*, wait_seconds: float = WRITER_WAIT_SECONDS) -> dict[str, int | None]:
    """Drops the totals and counts everything again from the source tables, for after rows were deleted or
    changed by hand; readers see the old totals until it commits.

    The watermarks are locked first, as a roll-up locks its own before it touches the totals: a roll-up running
    meanwhile finishes first or waits for this one (the other order deadlocked).
    """
    if Watermark.objects.filter(source="retention").exists():
        # Retention purged rows that only the totals still count (rollups/retention.py): a recount from the
        # source tables would lose them for good (docs/privacy.md, "Retention").
        raise Unprocessable("the totals hold rows that retention purged: a rebuild would lose them")
    Watermark.objects.bulk_create([Watermark(source=model._meta.db_table) for model in _ADD_SQL], ignore_conflicts=True)
    Watermark.objects.exclude(source="retention").update(last_id=0, rolled_up_at=None)
    LinkTotals.objects.all().delete()
    DailyTotals.objects.all().delete()
    DailyClickKinds.objects.all().delete()
    DailyBreakdowns.objects.all().delete()
    WorkspaceBreakdowns.objects.all().delete()
    CampaignTotals.objects.all().delete()
    result = {
        model._meta.db_table: source_roll_up(model=model, wait_seconds=wait_seconds)
        for model in _ADD_SQL
        if model is not CampaignNumberDelta
    }
    result[_DELTAS] = campaign_numbers_recount()  # last: it holds off state changes until the commit
    return result


def campaign_numbers_recount() -> int:
    """Enrollments by state, sends, complaints and unsubscribes, and the sends per step and day (DailyStepSends),
    counted from the source tables, with the delta log's watermark at its newest row; inside the caller's
    transaction. Returns the watermark.

    Every change of those numbers writes a delta in its own statement, so a SHARE lock on the log waits
    for the transactions that changed them and holds off new ones until the commit: the count and the
    watermark then describe the same committed rows.
    """
    with sql_cursor() as cursor:
        cursor.execute(_DELTAS_LOCK_SQL)
        cursor.execute(_DELTAS_MAX_ID_SQL)
        top = cursor.fetchone().top or 0
        cursor.execute(_RECOUNT_SQL)
        cursor.execute(_STEPS_CLEAR_SQL)
        cursor.execute(_STEPS_RECOUNT_SQL)
        cursor.execute(_LOG_TRIM_SQL, {"upto": top})
    mark, _ = Watermark.objects.get_or_create(source=_DELTAS)
    last_id = max(top, mark.last_id)
    Watermark.objects.filter(pk=mark.pk).update(last_id=last_id, rolled_up_at=timezone.now())
    return last_id
