#!/usr/bin/env bash
# Grow a database to production size for the growth benchmark (docs/benchmarks.md, "Data growth"):
#
#   bash bench/seed_growth.sh            # creates lftrack_growth: 1M customers, 5M clicks and events
#   BENCH_DB=lftrack_small BENCH_CUSTOMERS=10000 BENCH_EVENTS=50000 bash bench/seed_growth.sh   # the baseline
#   BENCH_DB=lftrack_growth_50m BENCH_GROWTH_CLICKS=50000000 bash bench/seed_growth.sh   # 50M clicks, 5M events
#
# BENCH_GROWTH_CLICKS: the clicks (default: as many as BENCH_EVENTS, each converting once; more, and one
# in BENCH_GROWTH_CLICKS / BENCH_EVENTS converts). 50,000,000 clicks take about 18 GB of disk: `df -h` first.
#
# Everything is generated inside PostgreSQL (bench/seed_growth.sql, generate_series), not row by row.
# Then run the conversions benchmark and the admin pages against it:
#   BENCH_DB=lftrack_growth BENCH_REUSE_DB=1 bash bench/conversions.sh
#   BENCH_DB=lftrack_growth bash bench/admin_pages.sh
#   BENCH_DB=lftrack_growth BENCH_REUSE_DB=1 bash bench/redirect.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PG_URL=${BENCH_PG_URL:-postgres://postgres@127.0.0.1:5432}
DB=${BENCH_DB:-lftrack_growth}
[ -x .venv/bin/python ] || make install
psql "$PG_URL/postgres" -qc "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" >/dev/null
DATABASE_URL="$PG_URL/$DB" SECRET_KEY=bench-only .venv/bin/python manage.py migrate --noinput >/dev/null
time psql "$PG_URL/$DB" -q -v customers="${BENCH_CUSTOMERS:-1000000}" -v events="${BENCH_EVENTS:-5000000}" \
  ${BENCH_GROWTH_CLICKS:+-v clicks="$BENCH_GROWTH_CLICKS"} -f bench/seed_growth.sql
