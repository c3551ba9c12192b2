"""Triggers that log every change of a campaign's numbers into rollups_campaignnumberdelta, and the first totals.

Enrollments (by state), email sends (sent, complained) and unsubscribed suppressions are the only rows
the numbers depend on, and their triggers run inside the changing statement, so every path (services,
the sender's bulk UPDATEs, cascades, raw SQL) is logged in its own transaction: one row per campaign
per statement (transition tables: a sender batch of 100 is one row). Customers, clicks and conversion
events get no trigger.

Unsubscribes count enrollments whose contact's address is on the workspace's list as unsubscribed,
so they change when an enrollment is inserted or deleted and when such a suppression is. The two
triggers take an advisory lock on (workspace, lower(email)), hashed into 256 buckets (shared by
enrollments, exclusive by suppressions), before looking at the other table: whichever commits second
sees the first and counts the pair, so a suppression racing an enrollment is counted exactly once.
Relied on, as the services guarantee: an enrollment's campaign, workspace and customer never change,
and a contact's address never changes once it has enrollments (customer_match only fills a blank).
"""

from django.db import migrations

DELTAS = "rollups_campaignnumberdelta"
COLUMNS = "campaign_id, enrollments_active, enrollments_stopped, enrollments_completed, sends, complaints, unsubscribes"
LOCK_CLASS = 4210  # the advisory lock space of the unsubscribe buckets

# Counts the totals from the source tables; also rollups.services._RECOUNT_SQL (kept as it was here).
RECOUNT_SQL = """
WITH e AS (
    SELECT campaign_id, SUM(CASE WHEN state = 'active' THEN 1 ELSE 0 END) AS active,
        SUM(CASE WHEN state = 'stopped' THEN 1 ELSE 0 END) AS stopped,
        SUM(CASE WHEN state = 'completed' THEN 1 ELSE 0 END) AS completed
    FROM campaigns_enrollment GROUP BY campaign_id
), m AS (
    SELECT campaign_id, SUM(CASE WHEN status = 'sent' THEN 1 ELSE 0 END) AS sends, COUNT(complained_at) AS complaints
    FROM campaigns_emailsend GROUP BY campaign_id
), u AS (
    SELECT en.campaign_id, COUNT(*) AS unsubscribes FROM campaigns_enrollment en
    JOIN customers_customer cu ON cu.id = en.customer_id
    JOIN campaigns_suppression su ON su.workspace_id = en.workspace_id AND su.email = LOWER(cu.email)
        AND su.reason = 'unsubscribed'
    GROUP BY en.campaign_id
)
INSERT INTO rollups_campaigntotals (campaign_id, workspace_id, leads, enrollments_active, enrollments_stopped,
    enrollments_completed, sends, complaints, unsubscribes)
SELECT c.id, c.workspace_id, 0, COALESCE(e.active, 0), COALESCE(e.stopped, 0), COALESCE(e.completed, 0),
    COALESCE(m.sends, 0), COALESCE(m.complaints, 0), COALESCE(u.unsubscribes, 0)
FROM campaigns_campaign c LEFT JOIN e ON e.campaign_id = c.id LEFT JOIN m ON m.campaign_id = c.id
    LEFT JOIN u ON u.campaign_id = c.id
WHERE TRUE
ON CONFLICT (campaign_id) DO UPDATE SET enrollments_active = excluded.enrollments_active,
    enrollments_stopped = excluded.enrollments_stopped, enrollments_completed = excluded.enrollments_completed,
    sends = excluded.sends, complaints = excluded.complaints, unsubscribes = excluded.unsubscribes
"""

# ---------------------------------------------------------------------------------------------
# Statement triggers with transition tables, one delta row per campaign and statement.


def _pg_enrollment_rows(rows: str, sign: str) -> str:
    """An INSERT or DELETE: lock the rows' unsubscribe buckets (in order), then count, in a later statement
    (a fresh snapshot), the states and the addresses already unsubscribed."""
    return f"""
        PERFORM pg_advisory_xact_lock_shared({LOCK_CLASS}, bucket) FROM (
            SELECT DISTINCT rollups_unsubscribe_bucket(r.workspace_id, cu.email) AS bucket
            FROM {rows} r JOIN customers_customer cu ON cu.id = r.customer_id WHERE cu.email <> '' ORDER BY 1
        ) AS buckets;
        FOR d IN
            SELECT r.campaign_id, COUNT(*) FILTER (WHERE r.state = 'active') AS active,
                COUNT(*) FILTER (WHERE r.state = 'stopped') AS stopped,
                COUNT(*) FILTER (WHERE r.state = 'completed') AS completed, COUNT(su.id) AS unsubscribes
            FROM {rows} r LEFT JOIN customers_customer cu ON cu.id = r.customer_id
            LEFT JOIN campaigns_suppression su ON su.workspace_id = r.workspace_id AND su.email = lower(cu.email)
                AND su.reason = 'unsubscribed'
            GROUP BY r.campaign_id
        LOOP
            INSERT INTO {DELTAS} ({COLUMNS})
            VALUES (d.campaign_id, {sign}d.active, {sign}d.stopped, {sign}d.completed, 0, 0, {sign}d.unsubscribes);
        END LOOP;"""


def _pg_changes(parts: list[str], columns: list[str], values: str) -> str:
    """Loop over per-campaign sums of `parts` (SELECTs of campaign_id and `columns`, signed) and log the
    campaigns whose sums are not all zero."""
    sums = ", ".join(f"SUM({column}) AS {column}" for column in columns)
    nonzero = " OR ".join(f"SUM({column}) <> 0" for column in columns)
    union = "\n                UNION ALL\n                ".join(parts)
    return f"""
        FOR d IN
            SELECT campaign_id, {sums} FROM (
                {union}
            ) AS changes GROUP BY campaign_id HAVING {nonzero}
        LOOP
            INSERT INTO {DELTAS} ({COLUMNS}) VALUES ({values});
        END LOOP;"""


_STATES = ["active", "stopped", "completed"]


def _pg_states(rows: str, sign: str) -> str:
    states = ", ".join(f"{sign}(state = '{state}')::int AS {state}" for state in _STATES)
    return f"SELECT campaign_id, {states} FROM {rows}"


def _pg_sends(rows: str, sign: str) -> str:
    return (
        f"SELECT campaign_id, {sign}(status = 'sent')::int AS sends,"
        f" {sign}(complained_at IS NOT NULL)::int AS complaints FROM {rows}"
    )


_STATE_VALUES = "d.campaign_id, d.active, d.stopped, d.completed, 0, 0, 0"
_SEND_VALUES = "d.campaign_id, 0, 0, 0, d.sends, d.complaints, 0"


def _pg_suppression(image: str, sign: str) -> str:
    """The enrollments of the suppressed address, counted after taking its bucket exclusively."""
    return f"""
        IF {image}.reason = 'unsubscribed' THEN
            PERFORM pg_advisory_xact_lock({LOCK_CLASS}, rollups_unsubscribe_bucket({image}.workspace_id, {image}.email));
            INSERT INTO {DELTAS} ({COLUMNS})
            SELECT en.campaign_id, 0, 0, 0, 0, 0, {sign}COUNT(*) FROM campaigns_enrollment en
            JOIN customers_customer cu ON cu.id = en.customer_id
            WHERE en.workspace_id = {image}.workspace_id AND lower(cu.email) = {image}.email AND cu.email <> ''
            GROUP BY en.campaign_id;
        END IF;"""


PG_FORWARD = f"""
CREATE FUNCTION rollups_unsubscribe_bucket(workspace_id bigint, email text) RETURNS integer
LANGUAGE sql STABLE AS $$ SELECT hashtext(workspace_id::text || ' ' || lower(email)) & 255 $$;

-- One function for the three triggers of a table: each branch reads only the transition tables its event has.
CREATE FUNCTION rollups_enrollment_numbers() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE d record;
BEGIN
    IF TG_OP = 'INSERT' THEN {_pg_enrollment_rows("new_rows", "")}
    ELSIF TG_OP = 'DELETE' THEN {_pg_enrollment_rows("old_rows", "-")}
    ELSE  -- most UPDATEs (the schedule, an activation) keep every state: nothing is logged then
        {_pg_changes([_pg_states("new_rows", ""), _pg_states("old_rows", "-")], _STATES, _STATE_VALUES)}
    END IF;
    RETURN NULL;
END $$;

CREATE FUNCTION rollups_emailsend_numbers() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE d record;
BEGIN
    -- The sender inserts its reservations `failed` and deletes them `failed` when released: nothing logged.
    IF TG_OP = 'INSERT' THEN {_pg_changes([_pg_sends("new_rows", "")], ["sends", "complaints"], _SEND_VALUES)}
    ELSIF TG_OP = 'DELETE' THEN {_pg_changes([_pg_sends("old_rows", "-")], ["sends", "complaints"], _SEND_VALUES)}
    ELSE {_pg_changes([_pg_sends("new_rows", ""), _pg_sends("old_rows", "-")], ["sends", "complaints"], _SEND_VALUES)}
    END IF;
    RETURN NULL;
END $$;

CREATE FUNCTION rollups_suppression_numbers() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN {_pg_suppression("OLD", "-")}
    END IF;
    IF TG_OP <> 'DELETE' THEN {_pg_suppression("NEW", "")}
    END IF;
    RETURN NULL;
END $$;
"""
for _table, _function in [
    ("campaigns_enrollment", "rollups_enrollment_numbers"),
    ("campaigns_emailsend", "rollups_emailsend_numbers"),
]:
    PG_FORWARD += f"""
CREATE TRIGGER {_function}_insert AFTER INSERT ON {_table}
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION {_function}();
CREATE TRIGGER {_function}_update AFTER UPDATE ON {_table}
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION {_function}();
CREATE TRIGGER {_function}_delete AFTER DELETE ON {_table}
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION {_function}();
"""
PG_FORWARD += """
CREATE TRIGGER rollups_suppression_numbers AFTER INSERT OR DELETE OR UPDATE OF workspace_id, email, reason
    ON campaigns_suppression FOR EACH ROW EXECUTE FUNCTION rollups_suppression_numbers();
"""

PG_REVERSE = """
DROP TRIGGER rollups_suppression_numbers ON campaigns_suppression;
DROP TRIGGER rollups_emailsend_numbers_insert ON campaigns_emailsend;
DROP TRIGGER rollups_emailsend_numbers_update ON campaigns_emailsend;
DROP TRIGGER rollups_emailsend_numbers_delete ON campaigns_emailsend;
DROP TRIGGER rollups_enrollment_numbers_insert ON campaigns_enrollment;
DROP TRIGGER rollups_enrollment_numbers_update ON campaigns_enrollment;
DROP TRIGGER rollups_enrollment_numbers_delete ON campaigns_enrollment;
DROP FUNCTION rollups_suppression_numbers();
DROP FUNCTION rollups_emailsend_numbers();
DROP FUNCTION rollups_enrollment_numbers();
DROP FUNCTION rollups_unsubscribe_bucket(bigint, text);
"""


def forward(apps, schema_editor) -> None:
    """Triggers first: CREATE TRIGGER holds off writers of those tables until this commits, so the count
    below and the log that starts empty meet exactly."""
    schema_editor.execute(PG_FORWARD)
    schema_editor.execute(RECOUNT_SQL)


def backward(apps, schema_editor) -> None:
    schema_editor.execute(PG_REVERSE)


class Migration(migrations.Migration):
    dependencies = [
        ("campaigns", "0005_lead_tail_index"),
        ("customers", "0003_drop_redundant_indexes"),
        ("rollups", "0002_campaign_number_deltas"),
    ]

    operations = [migrations.RunPython(forward, backward)]
