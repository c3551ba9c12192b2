"""Every hand-written statement of the service code, EXPLAINed: a column renamed in a model fails here, not in production.

The statements are listed below by the expression each `cursor.execute(...)` of the code passes; a scan of the code
finds every such call, so a statement added or changed without being listed here fails the first test.
"""

import ast
import re
from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path

import pytest
from django.db import ProgrammingError, connection, transaction

import campaigns.broadcast_sending
import campaigns.broadcasts
import campaigns.confirmation
import campaigns.selectors
import campaigns.sending
import campaigns.services
import clicks.recipients
import clicks.selectors
import clicks.services
import conversions.refunds
import conversions.selectors
import conversions.services
import conversions.step_numbers
import customers.erasure
import customers.services
import rollups.metrics
import rollups.retention
import rollups.selectors
import rollups.services
import webhooks.delivery
import webhooks.outbox
import workspaces.tokens
from campaigns.models import Broadcast, CampaignLead, Segment
from clicks.models import Click
from conversions.models import ConversionEvent, Refund
from rollups.models import CampaignNumberDelta, DailyTotals, LinkTotals

ROOT = Path(__file__).resolve().parent.parent
SCANNED = ("backoffice", "campaigns", "clicks", "conversions", "customers", "lftrack", "payments", "rollups")
SCANNED += ("webhooks", "workspaces")
NOW = datetime(2026, 1, 1)
ROLLED_UP = (Click, ConversionEvent, Refund, CampaignLead, CampaignNumberDelta)
GROUPS = rollups.selectors.GROUPS  # "day" first: per link, the totals have no day
SCOPE = "x.workspace_id = %(workspace)s" + rollups.selectors._link_scope(link_ids=[1], post_ids=[1], campaign_ids=[1])


def _constant(module, name: str) -> Callable[[], Iterable[str]]:
    return lambda: [getattr(module, name)]


def _broadcast_start_sql() -> str:
    """The start of a broadcast whose segment has every filter (ids need not exist: the statement is only planned)."""
    filters = {
        "tags": ["vip"],
        "sources": ["api"],
        "campaign_id": 1,
        "enrollment_states": ["active"],
        "converted": True,
        "first_touch_post_id": 1,
        "first_touch_link_id": 1,
        "created_from": "2026-01-01",
        "created_to": "2026-02-01",
    }
    broadcast = Broadcast(pk=1, workspace_id=1, segment=Segment(workspace_id=1, filters=filters))
    return campaigns.broadcasts.start_sql(broadcast=broadcast)[0]


# (module, the statement's expression at its cursor.execute) -> the statements it can be, to EXPLAIN.
STATEMENTS: dict[tuple[str, str], Callable[[], Iterable[str]]] = {
    ("clicks.services", "_follow_sql(len(visits))"): lambda: [clicks.services._follow_sql(n) for n in (1, 2, 16)],
    ("clicks.services", "_DESTINATION_SQL"): _constant(clicks.services, "_DESTINATION_SQL"),
    ("clicks.selectors", "_BREAKDOWN_SQL"): _constant(clicks.selectors, "_BREAKDOWN_SQL"),
    ("conversions.services", "_RECORD_SQL if occurred_at is None else _RECORD_BACKDATED_SQL"): lambda: [
        conversions.services._RECORD_SQL,
        conversions.services._RECORD_BACKDATED_SQL,
    ],
    ("conversions.services", "_CLAIM_SQL"): _constant(conversions.services, "_CLAIM_SQL"),
    ("conversions.refunds", "_INSERT_SQL"): _constant(conversions.refunds, "_INSERT_SQL"),
    ("customers.services", "_INSERT_OR_CANDIDATES_SQL"): _constant(customers.services, "_INSERT_OR_CANDIDATES_SQL"),
    ("customers.services", "_CANDIDATES_SQL"): _constant(customers.services, "_CANDIDATES_SQL"),
    ("customers.services", "_INSERTED_SQL"): _constant(customers.services, "_INSERTED_SQL"),
    ("customers.services", "_EXTERNAL_ID_LOCK_SQL"): _constant(customers.services, "_EXTERNAL_ID_LOCK_SQL"),
    ("workspaces.tokens", "_AUTHENTICATE_SQL"): _constant(workspaces.tokens, "_AUTHENTICATE_SQL"),
    ("webhooks.outbox", "_EMIT_SQL"): _constant(webhooks.outbox, "_EMIT_SQL"),
    ("webhooks.outbox", "_DELIVERIES_SQL"): _constant(webhooks.outbox, "_DELIVERIES_SQL"),
    ("webhooks.outbox", "_DISPATCHED_SQL"): _constant(webhooks.outbox, "_DISPATCHED_SQL"),
    ("webhooks.outbox", "_DISPATCH_JOBS_DROP_SQL"): _constant(webhooks.outbox, "_DISPATCH_JOBS_DROP_SQL"),
    ("webhooks.outbox", "_STALE_WORKSPACES_SQL"): _constant(webhooks.outbox, "_STALE_WORKSPACES_SQL"),
    ("webhooks.delivery", "_SLOT_LOCK_SQL"): _constant(webhooks.delivery, "_SLOT_LOCK_SQL"),
    ("webhooks.delivery", "_SLOT_UNLOCK_SQL"): _constant(webhooks.delivery, "_SLOT_UNLOCK_SQL"),
    ("webhooks.delivery", "_FAILURES_SQL"): _constant(webhooks.delivery, "_FAILURES_SQL"),
    ("campaigns.confirmation", "*confirmation_candidates_sql(now=now, batch_size=_BATCH)"): lambda: [
        campaigns.confirmation.confirmation_candidates_sql(now=NOW, batch_size=10)[0]
    ],
    ("campaigns.sending", "*claim_sql(now=now, batch_size=batch_size)"): lambda: [
        campaigns.sending.claim_sql(now=NOW, batch_size=10)[0]
    ],
    ("campaigns.sending", "_HANDING_OVER_SQL"): _constant(campaigns.sending, "_HANDING_OVER_SQL"),
    ("campaigns.sending", "_ABANDONED_SQL"): _constant(campaigns.sending, "_ABANDONED_SQL"),
    ("campaigns.services", "_CAMPAIGN_SHARE_SQL"): _constant(campaigns.services, "_CAMPAIGN_SHARE_SQL"),
    ("campaigns.services", "_ENROLLMENT_INSERT_SQL"): _constant(campaigns.services, "_ENROLLMENT_INSERT_SQL"),
    ("campaigns.selectors", "_BOUNCED_SQL"): _constant(campaigns.selectors, "_BOUNCED_SQL"),
    ("rollups.services", "_max_id_sql(table)"): lambda: [
        rollups.services._max_id_sql(model._meta.db_table) for model in ROLLED_UP
    ],
    ("rollups.services", "_WRITERS_SQL"): _constant(rollups.services, "_WRITERS_SQL"),
    ("rollups.services", "_STILL_OPEN_SQL"): _constant(rollups.services, "_STILL_OPEN_SQL"),
    ("rollups.services", "_LOG_TRIM_SQL"): _constant(rollups.services, "_LOG_TRIM_SQL"),
    ("rollups.services", "_UNITS_SQL[model]"): lambda: rollups.services._UNITS_SQL.values(),
    ("rollups.services", "statement"): lambda: [
        statement
        for statements in (*rollups.services._ADD_SQL.values(), *rollups.services._ADD_NARROWED_SQL.values())
        for statement in statements
    ],
    ("rollups.services", "_DELTAS_MAX_ID_SQL"): _constant(rollups.services, "_DELTAS_MAX_ID_SQL"),
    ("rollups.services", "_RECOUNT_SQL"): _constant(rollups.services, "_RECOUNT_SQL"),
    ("rollups.services", "_STEPS_CLEAR_SQL"): _constant(rollups.services, "_STEPS_CLEAR_SQL"),
    ("rollups.services", "_STEPS_RECOUNT_SQL"): _constant(rollups.services, "_STEPS_RECOUNT_SQL"),
    ("rollups.selectors", "_STEP_SENDS_SQL"): _constant(rollups.selectors, "_STEP_SENDS_SQL"),
    ("rollups.selectors", "_grouped_sql(totals=totals, group=group, scope=scope, days=days)"): lambda: [
        *(rollups.selectors._grouped_sql(totals=DailyTotals, group=group, scope=SCOPE, days=True) for group in GROUPS),
        *(  # a whole workspace's, by the workspace's own breakdowns
            rollups.selectors._grouped_sql(
                totals=DailyTotals, group=group, scope=rollups.selectors._WORKSPACE, days=True
            )
            for group in rollups.selectors.BREAKDOWNS
        ),
        *(
            rollups.selectors._grouped_sql(totals=LinkTotals, group=group, scope=SCOPE, days=False)
            for group in GROUPS[1:]
            if group not in rollups.selectors.BREAKDOWNS  # rolled up per day only
        ),
    ],
    ("rollups.selectors", "_click_kinds_sql(scope=scope)"): lambda: [rollups.selectors._click_kinds_sql(scope=SCOPE)],
    ("lftrack.views", "'SELECT 1'"): lambda: ["SELECT 1"],
    ("clicks.recipients", "_RECORD_SQL"): _constant(clicks.recipients, "_RECORD_SQL"),
    ("clicks.recipients", "_BROADCAST_SQL"): _constant(clicks.recipients, "_BROADCAST_SQL"),
    ("conversions.step_numbers", "clicks_sql"): lambda: [
        conversions.step_numbers._CLICKS_SQL,
        conversions.step_numbers._BROADCAST_CLICKS_SQL,
    ],
    ("conversions.step_numbers", "conversions_sql"): lambda: [
        conversions.step_numbers._CONVERSIONS_SQL,
        conversions.step_numbers._BROADCAST_CONVERSIONS_SQL,
    ],
    ("campaigns.broadcasts", "*start_sql(broadcast=locked)"): lambda: [_broadcast_start_sql()],
    ("campaigns.broadcast_sending", "_CLAIM_SQL"): _constant(campaigns.broadcast_sending, "_CLAIM_SQL"),
    ("campaigns.broadcast_sending", "_HANDING_OVER_SQL"): _constant(campaigns.broadcast_sending, "_HANDING_OVER_SQL"),
    ("campaigns.broadcast_sending", "_ABANDONED_SQL"): _constant(campaigns.broadcast_sending, "_ABANDONED_SQL"),
    ("rollups.metrics", "_ROLLUP_LAG_SQL"): _constant(rollups.metrics, "_ROLLUP_LAG_SQL"),
    ("rollups.metrics", "_BACKLOG_SQL"): _constant(rollups.metrics, "_BACKLOG_SQL"),
    ("rollups.metrics", "_WEBHOOKS_SQL"): _constant(rollups.metrics, "_WEBHOOKS_SQL"),
    ("rollups.retention", "_PROBE_SQL"): _constant(rollups.retention, "_PROBE_SQL"),
    ("rollups.retention", "_DOOMED_SQL"): _constant(rollups.retention, "_DOOMED_SQL"),
    ("customers.erasure", "_OTHERS_ACTIVITIES_SQL"): _constant(customers.erasure, "_OTHERS_ACTIVITIES_SQL"),
    ("customers.erasure", "_EVENTS_SQL"): _constant(customers.erasure, "_EVENTS_SQL"),
}
# Statements EXPLAIN cannot take (utility statements: they name no column), with why they are hand-written.
NOT_EXPLAINED = {
    ("lftrack.db", "'SET statement_timeout = 0'"): "lift_timeouts: a session setting",
    ("lftrack.db", "'SET lock_timeout = 0'"): "lift_timeouts: a session setting",
    ("rollups.services", "_CONSTRAINTS_IMMEDIATE_SQL"): "source_roll_up: foreign keys checked per statement",
    ("rollups.services", "_DELTAS_LOCK_SQL"): "campaign_numbers_recount: a table lock",
    ("clicks.recipients", "_ASYNC_COMMIT_SQL"): "click_recipient_record: a transaction setting",
}


def executed() -> set[tuple[str, str]]:
    """(module, the statement's expression) of every `cursor.execute(...)` outside migrations and tests."""
    found = set()
    for package in SCANNED:
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            for node in ast.walk(ast.parse(path.read_text())):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "execute"
                    and isinstance(node.func.value, ast.Name)
                    and node.func.value.id == "cursor"
                ):
                    found.add((module, ast.unparse(node.args[0])))
    return found


def test_every_hand_statement_is_listed():
    found = executed()
    listed = set(STATEMENTS) | set(NOT_EXPLAINED)
    assert sorted(found - listed) == [], "list each new statement in tests/test_hand_sql.py, STATEMENTS"
    assert sorted(listed - found) == [], "statements listed but no longer executed"


# Parameters become NULL (of the type their context gives): EXPLAIN analyses the statement, plans it, never runs it.
_PLACEHOLDER = re.compile(r"%\(\w+\)s|%s|\$\d+")


def explain(sql: str) -> None:
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("EXPLAIN " + _PLACEHOLDER.sub("NULL", sql).replace("%%", "%"))


@pytest.mark.django_db
@pytest.mark.parametrize("key", sorted(STATEMENTS), ids=":".join)
def test_every_hand_statement_explains(key):
    statements = list(STATEMENTS[key]())
    assert statements
    for sql in statements:
        explain(sql)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("table", "column", "key", "fails"),
    [
        ("clicks_click", "user_agent", ("clicks.services", "_follow_sql(len(visits))"), True),
        ("customers_customer", "external_id", ("customers.services", "_INSERT_OR_CANDIDATES_SQL"), True),
        ("webhooks_endpoint", "event_types", ("webhooks.outbox", "_EMIT_SQL"), True),
        ("workspaces_workspace", "currency", ("workspaces.tokens", "_AUTHENTICATE_SQL"), True),
        ("conversions_conversionevent", "event_name", ("conversions.services", "_CLAIM_SQL"), False),
    ],
)
def test_a_renamed_column_fails_the_statements_that_name_it(table, column, key, fails):
    """The check above is worth its name only if it fails on schema drift: with a column renamed (in a savepoint,
    rolled back), the statements that name it no longer EXPLAIN, and the others still do."""
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(f"ALTER TABLE {table} RENAME COLUMN {column} TO {column}_renamed")
        for sql in STATEMENTS[key]():
            if fails:
                with pytest.raises(ProgrammingError, match=column):
                    explain(sql)
            else:
                explain(sql)
        transaction.set_rollback(True)
