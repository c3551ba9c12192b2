#!/usr/bin/env bash
# The analytics' workspace-wide statements against the daily totals as they are (money in bigint) and against a
# copy whose money columns are numeric(38, 0), mixed in one pgbench run so both meet the same load
# (docs/benchmarks.md, "Money sums: bigint, not numeric"):
#
#   BENCH_DB=lftrack_growth bash bench/money_sums.sh      # a database grown by bench/seed_growth.sh
#
# Rolls up first, copies rollups_dailytotals to bench_dailytotals_numeric (dropped at the end), writes the 30-day
# per-day and per-link statements of the busiest workspace as daily_numbers sends them, and runs each pair for
# BENCH_SECONDS (60) on one connection. Prints each statement's mean latency.
set -euo pipefail
cd "$(dirname "$0")/.."
PG_URL=${BENCH_PG_URL:-postgres://postgres@127.0.0.1:5432}
DB=${BENCH_DB:-lftrack_growth}
SECONDS_EACH=${BENCH_SECONDS:-60}
export DATABASE_URL="$PG_URL/$DB" SECRET_KEY=bench-only-secret-key-not-for-production DEBUG=0 ALLOWED_HOSTS=127.0.0.1
export PGOPTIONS="-c client_min_messages=warning"
WORK=$(mktemp -d)
cleanup() {
  rm -rf "$WORK"
  psql "$DATABASE_URL" -qc "DROP TABLE IF EXISTS bench_dailytotals_numeric" >/dev/null
}
trap cleanup EXIT

.venv/bin/python manage.py roll_up_numbers >/dev/null
psql "$DATABASE_URL" -q \
  -c "DROP TABLE IF EXISTS bench_dailytotals_numeric" \
  -c "CREATE TABLE bench_dailytotals_numeric (LIKE rollups_dailytotals INCLUDING ALL)" \
  -c "ALTER TABLE bench_dailytotals_numeric ALTER COLUMN revenue_cents TYPE numeric(38, 0), ALTER COLUMN refunded_cents TYPE numeric(38, 0)" \
  -c "INSERT INTO bench_dailytotals_numeric SELECT * FROM rollups_dailytotals" \
  -c "VACUUM ANALYZE bench_dailytotals_numeric" -c "VACUUM ANALYZE rollups_dailytotals" >/dev/null
BENCH_WORK="$WORK" .venv/bin/python manage.py shell --no-imports -v 0 -c '
import os
from datetime import timedelta
from django.db import connection
from django.db.models import Count
from django.utils import timezone
from psycopg import ClientCursor
from clicks.models import Click
from rollups.models import DailyTotals, Watermark
from rollups.selectors import SOURCES, _grouped_sql, day_bounds
workspace = Click.objects.values("workspace_id").annotate(n=Count("*")).order_by("-n")[0]["workspace_id"]
until = timezone.now().date()
since = until - timedelta(days=29)
start, end = day_bounds(since, until)
marks = dict(Watermark.objects.values_list("source", "last_id"))
params = {"workspace": workspace, "since": since, "until": until, "start": start, "end": end,
          **{f"mark_{source.table}": marks.get(source.table, 0) for source in SOURCES.values()}}
connection.ensure_connection()
for group in ("day", "link"):
    sql = _grouped_sql(totals=DailyTotals, group=group, scope="x.workspace_id = %(workspace)s", days=True)
    with ClientCursor(connection.connection) as cursor:
        text = cursor.mogrify(sql, params).replace("\n", " ") + ";\n"
    with open(os.path.join(os.environ["BENCH_WORK"], f"{group}_bigint.sql"), "w") as out:
        out.write(text)
    with open(os.path.join(os.environ["BENCH_WORK"], f"{group}_numeric.sql"), "w") as out:
        out.write(text.replace(DailyTotals._meta.db_table, "bench_dailytotals_numeric"))
'
echo "money sums on $DB: $(psql "$DATABASE_URL" -tAc 'SELECT count(*) FROM rollups_dailytotals') daily totals rows;" \
  "load $(cut -d' ' -f1-3 /proc/loadavg)"
for group in day link; do
  pgbench -n -c 1 -T "$SECONDS_EACH" -f "$WORK/${group}_bigint.sql@1" -f "$WORK/${group}_numeric.sql@1" "$DATABASE_URL" 2>&1 \
    | awk -v group="$group" '/^SQL script/ {script = $4} /latency average/ && script {printf "30 days per %-4s %-22s %s ms\n", group, script, $5}' \
    | sed "s#$WORK/##"
done
