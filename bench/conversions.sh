#!/usr/bin/env bash
# Benchmark POST /api/v1/conversions (or, with BENCH_ENDPOINT=campaign_leads, POST
# /api/v1/campaigns/bench/leads): gunicorn + PostgreSQL + Redis on this machine, driven by wrk.
#
#   bash bench/conversions.sh
#
# Creates its own database (BENCH_DB, dropped and re-created), migrates, seeds clicks and customers,
# starts gunicorn on 127.0.0.1 with the rate limits raised through RATELIMIT_* (still enforced on
# Redis), warms up, runs `wrk -t2 -c16` for BENCH_SECONDS, prints requests/s, p50/p99 latency and the
# count of non-2xx answers, and stops everything it started. For conversions it also runs pgbench on
# the same database with the SQL a conversion runs (bench/conversion_sql.py records it from the code),
# half of BENCH_SECONDS before wrk and half after, with as many connections as gunicorn has threads,
# and prints the ratio of the two. Needs PostgreSQL (with its pgbench) and Redis running (as in
# .ci/run); installs wrk with apt-get when it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

PG_URL=${BENCH_PG_URL:-postgres://postgres@127.0.0.1:5432}
BENCH_DB=${BENCH_DB:-lftrack_bench}
REDIS_URL=${BENCH_REDIS_URL:-redis://127.0.0.1:6379/15}
PORT=${BENCH_PORT:-8765}
SECONDS_RUN=${BENCH_SECONDS:-30}
WARMUP=${BENCH_WARMUP:-5}
# 2 cores shared with PostgreSQL, Redis and wrk: 2 worker processes (one per core, so the GIL never
# serialises all requests) with 4 threads each, so a worker keeps its core busy while a thread waits
# on PostgreSQL or Redis, and gthread keeps wrk's 16 connections alive (sync workers close them).
WORKERS=${BENCH_WORKERS:-2}
THREADS=${BENCH_THREADS:-4}
PY=.venv/bin/python
SEED=$(mktemp)
PGB_DIR=$(mktemp -d)
PGBENCH=${BENCH_PGBENCH:-$(command -v pgbench || ls /usr/lib/postgresql/*/bin/pgbench 2>/dev/null | tail -1)}

if ! command -v wrk >/dev/null; then
  echo "bench: installing wrk"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null
fi
[ -x "$PY" ] || make install

export DATABASE_URL="$PG_URL/$BENCH_DB"
export REDIS_URL
export SECRET_KEY=bench-only-secret-key-not-for-production
export DEBUG=0 ALLOWED_HOSTS=127.0.0.1 LOG_LEVEL=WARNING CONN_MAX_AGE=600
# Limits raised for the run, not switched off: every request still counts on Redis.
export RATELIMIT_CONVERSIONS_TOKEN=${BENCH_RATELIMIT_TOKEN:-10000000/m}
export RATELIMIT_CONVERSIONS_IP=${BENCH_RATELIMIT_IP:-10000000/m}
export RATELIMIT_CAMPAIGN_LEADS_TOKEN=${BENCH_RATELIMIT_TOKEN:-10000000/m}
# The wrk script: bench/conversions.lua or bench/campaign_leads.lua.
SCRIPT=bench/${BENCH_ENDPOINT:-conversions}.lua

GUNICORN_PID=""
cleanup() {
  if [ -n "$GUNICORN_PID" ] && kill -0 "$GUNICORN_PID" 2>/dev/null; then
    kill "$GUNICORN_PID"
    wait "$GUNICORN_PID" 2>/dev/null || true
  fi
  rm -rf "$SEED" "$PGB_DIR"
  if [ -z "${BENCH_KEEP_DB:-}${BENCH_REUSE_DB:-}" ]; then
    psql "$PG_URL/postgres" -qc "DROP DATABASE IF EXISTS $BENCH_DB" >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT

# BENCH_REUSE_DB=1 runs against an existing database as it is (e.g. BENCH_DB=lftrack_growth, grown
# by bench/seed_growth.sh), adding only this run's own workspace, clicks and customers.
if [ -z "${BENCH_REUSE_DB:-}" ]; then
  psql "$PG_URL/postgres" -qc "DROP DATABASE IF EXISTS $BENCH_DB" >/dev/null
  psql "$PG_URL/postgres" -qc "CREATE DATABASE $BENCH_DB" >/dev/null
fi
$PY manage.py migrate --noinput >/dev/null
$PY bench/seed.py "$SEED" "${BENCH_CLICKS:-20000}" "${BENCH_CUSTOMERS:-5000}"
psql "$DATABASE_URL" -qc "VACUUM ANALYZE" >/dev/null

.venv/bin/gunicorn "${BENCH_WSGI:-lftrack.wsgi}" --bind "127.0.0.1:$PORT" --workers "$WORKERS" --threads "$THREADS" \
  --worker-class "${BENCH_WORKER_CLASS:-gthread}" --keep-alive 30 --max-requests 0 --log-level warning &
GUNICORN_PID=$!
for _ in $(seq 1 50); do
  curl -fs "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1 && break
  sleep 0.2
done
curl -fs "http://127.0.0.1:$PORT/healthz" >/dev/null || { echo "bench: gunicorn did not start" >&2; exit 1; }

# The SQL of each kind of request wrk sends, recorded from the code, for pgbench (conversions only).
PGBENCH_RUN=""
if [ "$SCRIPT" = bench/conversions.lua ] && [ -n "$PGBENCH" ]; then
  $PY bench/conversion_sql.py "$SEED" "$PGB_DIR" | sed 's/^/bench: /'
  # pgbench SECONDS: the conversion's SQL on as many connections as gunicorn has threads; prints its tps.
  PGBENCH_RUN=yes
  pgbench_tps() {
    "$PGBENCH" -n -M prepared -c $((WORKERS * THREADS)) -j 2 -T "$1" \
      -f "$PGB_DIR/new_sale.sql" -f "$PGB_DIR/seeded_lead.sql" -f "$PGB_DIR/new_lead.sql" -f "$PGB_DIR/seeded_sale.sql" \
      "$DATABASE_URL" 2>/dev/null | sed -nE 's/^tps = ([0-9.]+).*/\1/p'
  }
fi

echo "bench: gunicorn $WORKERS workers x $THREADS threads; warm-up ${WARMUP}s, then wrk -t2 -c16 -d${SECONDS_RUN}s"
echo "bench: load before the run: $(cut -d' ' -f1-3 /proc/loadavg)"
BENCH_SEED="$SEED" wrk -t2 -c16 -d"${WARMUP}s" -s "$SCRIPT" "http://127.0.0.1:$PORT" >/dev/null

# CPU seconds (user + system) used so far by the gunicorn workers and by this database's backends:
# the run's CPU per request, which other load on the machine disturbs far less than req/s.
cpu_of() { local t=0; for p in "$@"; do [ -r "/proc/$p/stat" ] && t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done; echo "$t"; }
sys_of() { local t=0; for p in "$@"; do [ -r "/proc/$p/stat" ] && t=$((t + $(awk '{print $15}' "/proc/$p/stat"))); done; echo "$t"; }
WORKER_PIDS=$(pgrep -P "$GUNICORN_PID" | tr '\n' ' ')
PG_PIDS=$(psql "$DATABASE_URL" -tAc "SELECT pid FROM pg_stat_activity WHERE datname = '$BENCH_DB' AND pid <> pg_backend_pid()" | tr '\n' ' ')
TICKS=$(getconf CLK_TCK)
# This host's speed drifts within minutes: pgbench runs half its time just before wrk and half just after.
[ -z "$PGBENCH_RUN" ] || TPS_BEFORE=$(pgbench_tps $(( (SECONDS_RUN + 1) / 2 )))
W0=$(cpu_of $WORKER_PIDS); P0=$(cpu_of $PG_PIDS); S0=$(sys_of $WORKER_PIDS)
WRK_OUT=$(BENCH_SEED="$SEED" wrk -t2 -c16 -d"${SECONDS_RUN}s" --latency -s "$SCRIPT" "http://127.0.0.1:$PORT")
W1=$(cpu_of $WORKER_PIDS); P1=$(cpu_of $PG_PIDS); S1=$(sys_of $WORKER_PIDS)
[ -z "$PGBENCH_RUN" ] || TPS_AFTER=$(pgbench_tps $(( (SECONDS_RUN + 1) / 2 )))
echo "$WRK_OUT" | grep -v '^RESULT'
RESULT=$(echo "$WRK_OUT" | grep '^RESULT')
REQUESTS=$(echo "$RESULT" | sed -E 's/.*requests=([0-9]+).*/\1/')
echo "$RESULT" | sed 's/^RESULT /bench: /'
awk -v w=$((W1 - W0)) -v s=$((S1 - S0)) -v p=$((P1 - P0)) -v n="$REQUESTS" -v hz="$TICKS" 'BEGIN {
  printf "bench: cpu per request: gunicorn %.2f ms (%.2f of it in the kernel), postgres %.2f ms\n",
    w / hz / n * 1000, s / hz / n * 1000, p / hz / n * 1000 }'
if [ -n "$PGBENCH_RUN" ]; then
  echo "$RESULT" | awk -v before="$TPS_BEFORE" -v after="$TPS_AFTER" '{
    for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
    tps = (before + after) / 2
    printf "bench: pgbench, the same SQL on the same database: %.0f tps (%.0f before wrk, %.0f after)\n", tps, before, after
    printf "bench: conversions / pgbench = %.2f\n", v["rps"] / tps
    ok = v["rps"] / tps >= 0.35 && v["p99_ms"] < 50 && v["non2xx"] == 0 && v["socket_errors"] == 0
    printf "bench: target (>= 0.35 x pgbench, p99 < 50 ms, no non-2xx): %s\n", ok ? "met" : "missed" }'
fi
echo "bench: stored (wrk's and pgbench's) $(psql "$DATABASE_URL" -tAc 'SELECT count(*) FROM conversions_conversionevent') events," \
  "$(psql "$DATABASE_URL" -tAc 'SELECT count(*) FROM customers_customer') customers;" \
  "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
