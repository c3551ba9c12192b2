#!/usr/bin/env bash
# Retention's purge on a grown database (docs/benchmarks.md, "Retention's purge"):
#
#   BENCH_DB=lftrack_purge BENCH_CUSTOMERS=100000 BENCH_EVENTS=1000000 BENCH_GROWTH_CLICKS=3000000 bash bench/seed_growth.sh
#   BENCH_DB=lftrack_purge BENCH_RETENTION_DAYS=15 BENCH_SECONDS=180 bash bench/retention.sh
#
# The seed spreads its clicks over 30 days at random; a live database's ids follow time (clicks are inserted as
# they happen), which the purge's bisection relies on, so the clicks' times are first laid out in id order (and
# each conversion moved to its click's time). Then the totals are rolled up, the window set, and
# `manage.py retention purge` runs for BENCH_SECONDS: the rate is its clicks (and conversions) per second.
set -euo pipefail
cd "$(dirname "$0")/.."
PG_URL=${BENCH_PG_URL:-postgres://postgres@127.0.0.1:5432}
export DATABASE_URL="$PG_URL/${BENCH_DB:-lftrack_purge}" SECRET_KEY=bench-only DB_STATEMENT_TIMEOUT=0
psql "$DATABASE_URL" -q <<'SQL'
UPDATE clicks_click SET created_at = date_trunc('day', now()) - interval '30 days'
    + (id - (SELECT min(id) FROM clicks_click)) * (interval '30 days' / (SELECT count(*) FROM clicks_click));
UPDATE conversions_conversionevent e SET occurred_at = c.created_at FROM clicks_click c WHERE c.id = e.click_id;
VACUUM ANALYZE clicks_click;
VACUUM ANALYZE conversions_conversionevent;
SQL
.venv/bin/python manage.py roll_up_numbers >/dev/null
.venv/bin/python manage.py workspace retention growth "${BENCH_RETENTION_DAYS:-15}" >/dev/null
time .venv/bin/python manage.py retention purge --seconds "${BENCH_SECONDS:-180}" \
  --batch-size "${BENCH_BATCH_SIZE:-2000}" 2>/dev/null
