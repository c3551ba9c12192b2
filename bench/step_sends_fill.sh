#!/usr/bin/env bash
# The fill of migration rollups/0007 (sends per campaign step and UTC day) over a large sends table: how long the
# sender waits while it runs (docs/benchmarks.md, "The campaign funnel"):
#
#   bash bench/step_sends_fill.sh            # BENCH_SENDS=2000000, twice
#
# Creates (and drops) the database lftrack_bench_fill, migrates it, and copies campaigns_emailsend and
# rollups_dailystepsends into a schema of their own (same columns and indexes, no foreign keys), so the sends can
# be made with generate_series: 97 campaigns of 5 steps, one send in 50 failed, over 89 days. Then runs the
# migration's own FILL statement (imported from it, so it follows the code) there, BENCH_RUNS times.
set -euo pipefail
cd "$(dirname "$0")/.."
PG_URL=${BENCH_PG_URL:-postgres://postgres@127.0.0.1:5432}
DB=${BENCH_DB:-lftrack_bench_fill}
SENDS=${BENCH_SENDS:-2000000}
RUNS=${BENCH_RUNS:-2}
export DATABASE_URL="$PG_URL/$DB" SECRET_KEY=bench-only-secret-key-not-for-production DEBUG=0 ALLOWED_HOSTS=127.0.0.1
export PGOPTIONS="-c client_min_messages=warning"
psql "$PG_URL/postgres" -qc "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB"
trap 'psql "$PG_URL/postgres" -qc "DROP DATABASE IF EXISTS $DB"' EXIT
.venv/bin/python manage.py migrate -v 0
MIGRATION=rollups.migrations.0007_daily_step_sends
FILL=$(.venv/bin/python -c "import importlib; print(importlib.import_module('$MIGRATION').FILL)")
psql "$DATABASE_URL" -q <<SQL
CREATE SCHEMA bench;
CREATE TABLE bench.campaigns_emailsend (LIKE public.campaigns_emailsend INCLUDING ALL);
CREATE TABLE bench.rollups_dailystepsends (LIKE public.rollups_dailystepsends INCLUDING ALL);
INSERT INTO bench.campaigns_emailsend
    (position, to_email, message_id, status, error, sent_at, campaign_id, workspace_id, enrollment_id)
SELECT i % 5 + 1, 'person' || i || '@growth.example', '<' || i || '.4242.9911@lftrack.example>',
       CASE WHEN i % 50 = 0 THEN 'failed' ELSE 'sent' END, '', now() - (i % 89) * interval '1 day',
       i % 97 + 1, 1, i / 5 + 1
FROM generate_series(1, $SENDS) i;
VACUUM ANALYZE bench.campaigns_emailsend;
SQL
echo "sends: $SENDS"
for _ in $(seq "$RUNS"); do
  psql "$DATABASE_URL" -q -c "SET search_path = bench" -c "TRUNCATE rollups_dailystepsends" -c '\timing on' -c "$FILL" \
    | grep -i '^time'
done
psql "$DATABASE_URL" -tAc "SELECT count(*) || ' step-days' FROM bench.rollups_dailystepsends"
