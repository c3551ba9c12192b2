"""Sends per campaign step and UTC day: the delta log's send rows say which step and day they changed (and count
failed sends too), rolled up into DailyStepSends; filled with the sends there are.

The send trigger of 0003 is replaced: it now logs one row per campaign, step position and UTC day of `sent_at`
per statement (a sender batch is still one or a few rows; a reservation, inserted `reserved`, logs nothing).
The rows logged before this migration have no position: the fill below counts what they described.

The first statement locks the sends against writers until the commit (SHARE ROW EXCLUSIVE, which waits for
open writers first, before the log's columns are added, so a sender holding the sends and waiting for the
log cannot deadlock with it): the fill then counts exactly the rows that no logged position describes.
One set-based statement, 1.0 s for 2,000,000 sends (docs/benchmarks.md, "The campaign funnel"), during
which the sender waits.
"""

import django.db.models.deletion
from django.db import migrations, models

DELTAS = "rollups_campaignnumberdelta"
ZEROS = "enrollments_active, enrollments_stopped, enrollments_completed, unsubscribes"
DAY = "(sent_at AT TIME ZONE 'UTC')::date"


def _send_numbers(*, keys: list[str], numbers: dict[str, str]) -> str:
    """The sends' trigger function: per statement, the signed `numbers` (name: condition on a row) of the old and
    new rows summed per `keys` (name: expression), one delta row per group that changed."""
    columns = ", ".join([*keys, *numbers])
    sums = ", ".join(f"SUM({name})" for name in numbers)

    def rows(table: str, sign: str) -> str:
        values = ", ".join(
            [
                *(expr if expr == name else f"{expr} AS {name}" for name, expr in keys.items()),
                *(f"{sign}({condition})::int AS {name}" for name, condition in numbers.items()),
            ]
        )
        return f"SELECT {values} FROM {table}"

    def log(*parts: str) -> str:
        groups = ", ".join(str(n) for n in range(1, len(keys) + 1))
        changed = " OR ".join(f"SUM({name}) <> 0" for name in numbers)
        union = "\n            UNION ALL ".join(parts)
        return (
            f"\n        INSERT INTO {DELTAS} ({columns}, {ZEROS})"
            f"\n        SELECT {', '.join(keys)}, {sums}, 0, 0, 0, 0 FROM ("
            f"\n            {union}"
            f"\n        ) AS changes GROUP BY {groups} HAVING {changed};"
        )

    return f"""
CREATE OR REPLACE FUNCTION rollups_emailsend_numbers() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- Each branch reads only the transition tables its event has.
    IF TG_OP = 'INSERT' THEN {log(rows("new_rows", ""))}
    ELSIF TG_OP = 'DELETE' THEN {log(rows("old_rows", "-"))}
    ELSE {log(rows("new_rows", ""), rows("old_rows", "-"))}
    END IF;
    RETURN NULL;
END $$;
"""


SENDS = {"sends": "status = 'sent'", "complaints": "complained_at IS NOT NULL"}
PG_FORWARD = _send_numbers(
    keys={"campaign_id": "campaign_id", "position": "position", "day": DAY},
    numbers={**SENDS, "failed": "status = 'failed'"},
)
PG_REVERSE = _send_numbers(keys={"campaign_id": "campaign_id"}, numbers=SENDS)  # 0003's

FILL = f"""
INSERT INTO rollups_dailystepsends (campaign_id, position, day, sent, failed)
SELECT campaign_id, position, {DAY}, COUNT(*) FILTER (WHERE status = 'sent'), COUNT(*) FILTER (WHERE status = 'failed')
FROM campaigns_emailsend WHERE status IN ('sent', 'failed') GROUP BY 1, 2, 3
"""


def forward(apps, schema_editor) -> None:
    schema_editor.execute(PG_FORWARD)
    schema_editor.execute(FILL)


def backward(apps, schema_editor) -> None:
    schema_editor.execute(PG_REVERSE)


class Migration(migrations.Migration):
    dependencies = [
        ("campaigns", "0009_provider_hooks"),
        ("rollups", "0006_daily_click_kinds"),
    ]

    operations = [
        migrations.RunSQL("LOCK TABLE campaigns_emailsend IN SHARE ROW EXCLUSIVE MODE", migrations.RunSQL.noop),
        migrations.AddField(
            model_name="campaignnumberdelta",
            name="day",
            field=models.DateField(null=True),
        ),
        migrations.AddField(
            model_name="campaignnumberdelta",
            name="failed",
            field=models.IntegerField(db_default=0),
        ),
        migrations.AddField(
            model_name="campaignnumberdelta",
            name="position",
            field=models.IntegerField(null=True),
        ),
        migrations.CreateModel(
            name="DailyStepSends",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("position", models.PositiveIntegerField()),
                ("day", models.DateField()),
                ("sent", models.BigIntegerField(default=0)),
                ("failed", models.BigIntegerField(default=0)),
                (
                    "campaign",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="campaigns.campaign",
                    ),
                ),
            ],
            options={
                "verbose_name_plural": "daily step sends",
                "constraints": [
                    models.UniqueConstraint(
                        fields=("campaign", "position", "day"), name="rollups_dailystepsends_one_per_day"
                    )
                ],
            },
        ),
        migrations.RunPython(forward, backward),
    ]
