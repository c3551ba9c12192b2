"""Test-mode enrollments and suppressions count in no number: the enrollment and suppression triggers of 0003
are replaced by the same functions skipping test rows (an enrollment's mode never changes, nor a suppression's).
Test sends need nothing: their status `test` is neither sent nor failed, and they are never complained of (the
check constraint campaigns_emailsend_test_never_complained). No test row existed before this migration, so
nothing logged so far changes."""

from django.db import migrations

DELTAS = "rollups_campaignnumberdelta"
COLUMNS = "campaign_id, enrollments_active, enrollments_stopped, enrollments_completed, sends, complaints, unsubscribes"
LOCK_CLASS = 4210  # 0003's advisory lock space of the unsubscribe buckets
_STATES = ["active", "stopped", "completed"]


def _functions(live: str) -> str:
    """0003's enrollment and suppression trigger functions; `live` is the extra condition on an enrollment row
    ("r.is_test" false), empty for 0003's own."""
    enrollment = " AND NOT {}.is_test" if live else ""

    def rows(table: str, sign: str) -> str:
        return f"""
        PERFORM pg_advisory_xact_lock_shared({LOCK_CLASS}, bucket) FROM (
            SELECT DISTINCT rollups_unsubscribe_bucket(r.workspace_id, cu.email) AS bucket
            FROM {table} r JOIN customers_customer cu ON cu.id = r.customer_id WHERE cu.email <> ''{enrollment.format("r")}
            ORDER BY 1
        ) AS buckets;
        FOR d IN
            SELECT r.campaign_id, COUNT(*) FILTER (WHERE r.state = 'active') AS active,
                COUNT(*) FILTER (WHERE r.state = 'stopped') AS stopped,
                COUNT(*) FILTER (WHERE r.state = 'completed') AS completed, COUNT(su.id) AS unsubscribes
            FROM {table} r LEFT JOIN customers_customer cu ON cu.id = r.customer_id
            LEFT JOIN campaigns_suppression su ON su.workspace_id = r.workspace_id AND su.email = lower(cu.email)
                AND su.reason = 'unsubscribed'{enrollment.format("su")}
            WHERE TRUE{enrollment.format("r")}
            GROUP BY r.campaign_id
        LOOP
            INSERT INTO {DELTAS} ({COLUMNS})
            VALUES (d.campaign_id, {sign}d.active, {sign}d.stopped, {sign}d.completed, 0, 0, {sign}d.unsubscribes);
        END LOOP;"""

    def states(table: str, sign: str) -> str:
        counted = ", ".join(f"{sign}(state = '{state}')::int AS {state}" for state in _STATES)
        return f"SELECT campaign_id, {counted} FROM {table} WHERE TRUE{enrollment.format(table)}"

    sums = ", ".join(f"SUM({state}) AS {state}" for state in _STATES)
    nonzero = " OR ".join(f"SUM({state}) <> 0" for state in _STATES)

    def suppression(image: str, sign: str) -> str:
        return f"""
        IF {image}.reason = 'unsubscribed'{enrollment.format(image)} THEN
            PERFORM pg_advisory_xact_lock({LOCK_CLASS}, rollups_unsubscribe_bucket({image}.workspace_id, {image}.email));
            INSERT INTO {DELTAS} ({COLUMNS})
            SELECT en.campaign_id, 0, 0, 0, 0, 0, {sign}COUNT(*) FROM campaigns_enrollment en
            JOIN customers_customer cu ON cu.id = en.customer_id
            WHERE en.workspace_id = {image}.workspace_id AND lower(cu.email) = {image}.email AND cu.email <> ''{enrollment.format("en")}
            GROUP BY en.campaign_id;
        END IF;"""

    return f"""
CREATE OR REPLACE FUNCTION rollups_enrollment_numbers() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE d record;
BEGIN
    IF TG_OP = 'INSERT' THEN {rows("new_rows", "")}
    ELSIF TG_OP = 'DELETE' THEN {rows("old_rows", "-")}
    ELSE  -- most UPDATEs (the schedule, an activation) keep every state: nothing is logged then
        FOR d IN
            SELECT campaign_id, {sums} FROM (
                {states("new_rows", "")}
                UNION ALL
                {states("old_rows", "-")}
            ) AS changes GROUP BY campaign_id HAVING {nonzero}
        LOOP
            INSERT INTO {DELTAS} ({COLUMNS}) VALUES (d.campaign_id, d.active, d.stopped, d.completed, 0, 0, 0);
        END LOOP;
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION rollups_suppression_numbers() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN {suppression("OLD", "-")}
    END IF;
    IF TG_OP <> 'DELETE' THEN {suppression("NEW", "")}
    END IF;
    RETURN NULL;
END $$;
"""


class Migration(migrations.Migration):
    dependencies = [
        ("campaigns", "0010_test_mode"),
        ("rollups", "0007_daily_step_sends"),
    ]

    operations = [migrations.RunSQL(_functions(live="is_test"), _functions(live=""))]
