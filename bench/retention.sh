#!/usr/bin/env bash
# Retention's purge on a grown database (docs/benchmarks.md, "Retention's purge"):
#
#   BENCH_DB=lftrack_purge BENCH_CUSTOMERS=100000 BENCH_EVENTS=1000000 BENCH_GROWTH_CLICKS=3000000 bash bench/seed_growth.sh
#   BENCH_DB=lftrack_purge BENCH_RETENTION_DAYS=15 BENCH_SECONDS=180 bash bench/retention.sh
#
# The seed lays its clicks out over 30 days in id order, as a live database's ids follow time (the purge's
# bisection relies on it), each conversion at its click's time. The totals are rolled up, the window set, and
# `manage.py retention purge` runs for BENCH_SECONDS: the rate is its clicks (and conversions) per second.
set -euo pipefail
cd "$(dirname "$0")/.."
PG_URL=${BENCH_PG_URL:-postgres://postgres@127.0.0.1:5432}
export DATABASE_URL="$PG_URL/${BENCH_DB:-lftrack_purge}" SECRET_KEY=bench-only DB_STATEMENT_TIMEOUT=0
psql "$DATABASE_URL" -q <<'SQL'
VACUUM ANALYZE clicks_click;
VACUUM ANALYZE conversions_conversionevent;
SQL
.venv/bin/python manage.py roll_up_numbers >/dev/null
.venv/bin/python manage.py workspace retention growth "${BENCH_RETENTION_DAYS:-15}" >/dev/null
time .venv/bin/python manage.py retention purge --seconds "${BENCH_SECONDS:-180}" \
  --batch-size "${BENCH_BATCH_SIZE:-2000}" 2>/dev/null
