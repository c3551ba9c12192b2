#!/usr/bin/env bash
# Benchmark GET /l/<key> against the Django floor, in one run: gunicorn + PostgreSQL + Redis, driven by wrk.
#
#   bash bench/redirect.sh
#
# Creates its own database (BENCH_DB, dropped and re-created), migrates, seeds BENCH_LINKS links, then
# in BENCH_ROUNDS rounds starts gunicorn on 127.0.0.1 (2 workers x 4 threads) twice, warms up and runs
# `wrk -t2 -c16` for BENCH_SECONDS with bench/redirect.lua (random links, browsers and bots, X-Forwarded-For over 250
# addresses behind TRUSTED_PROXY_COUNT=1): first bench/floor.py's `django` level (a 302 from a plain
# view behind every middleware, nothing looked up), then lftrack itself, the per-address click limit
# raised but counted on Redis. Prints both, the ratio, p99, the answers that were not a 302, and the
# clicks stored against the 302s answered. Needs PostgreSQL and Redis (as in .ci/run); installs wrk.
# BENCH_REUSE_DB=1 runs against an existing database as it is (e.g. BENCH_DB=lftrack_growth, grown by
# bench/seed_growth.sh), adding only this run's own workspace and links, and keeps it.
set -euo pipefail
cd "$(dirname "$0")/.."

PG_URL=${BENCH_PG_URL:-postgres://postgres@127.0.0.1:5432}
BENCH_DB=${BENCH_DB:-lftrack_bench_redirect}
PORT=${BENCH_PORT:-8766}
SECONDS_RUN=${BENCH_SECONDS:-10}
ROUNDS=${BENCH_ROUNDS:-3}
WARMUP=${BENCH_WARMUP:-5}
WORKERS=${BENCH_WORKERS:-2}
THREADS=${BENCH_THREADS:-4}
PY=.venv/bin/python
SEED=$(mktemp)

command -v wrk >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null; }
[ -x "$PY" ] || make install

export DATABASE_URL="$PG_URL/$BENCH_DB" REDIS_URL=${BENCH_REDIS_URL:-redis://127.0.0.1:6379/15}
export SECRET_KEY=bench-only-secret-key-not-for-production ENV_FILE=
export DEBUG=0 ALLOWED_HOSTS=127.0.0.1 LOG_LEVEL=WARNING CONN_MAX_AGE=600 TRUSTED_PROXY_COUNT=1
export RATELIMIT_REDIRECT_IP=${BENCH_RATELIMIT_IP:-10000000/m}

GUNICORN_PID=""
stop() {
  if [ -n "$GUNICORN_PID" ] && kill -0 "$GUNICORN_PID" 2>/dev/null; then kill "$GUNICORN_PID"; wait "$GUNICORN_PID" 2>/dev/null || true; fi
  GUNICORN_PID=""
}
cleanup() {
  stop
  rm -f "$SEED"
  [ -n "${BENCH_KEEP_DB:-}${BENCH_REUSE_DB:-}" ] || psql "$PG_URL/postgres" -qc "DROP DATABASE IF EXISTS $BENCH_DB" >/dev/null 2>&1 || true
}
trap cleanup EXIT

if [ -z "${BENCH_REUSE_DB:-}" ]; then
  psql "$PG_URL/postgres" -qc "DROP DATABASE IF EXISTS $BENCH_DB" >/dev/null
  psql "$PG_URL/postgres" -qc "CREATE DATABASE $BENCH_DB" >/dev/null
fi
$PY manage.py migrate --noinput >/dev/null
$PY manage.py shell -c "
import secrets
from clicks.services import link_create
from workspaces.services import workspace_create
workspace = workspace_create(slug=f'bench-{secrets.token_hex(4)}', name='Benchmark')
keys = [link_create(workspace=workspace, destination=f'https://shop.example.com/p/{i}?utm_source=bench', post_title=f'Post {i % 20}').key
        for i in range(${BENCH_LINKS:-200})]
open('$SEED', 'w').write('\n'.join(keys) + '\n')
"
psql "$DATABASE_URL" -qc "VACUUM ANALYZE" >/dev/null

# CPU seconds (user + system, in clock ticks) used so far by processes: gunicorn's workers, PostgreSQL's backends.
cpu_of() { local t=0; for p in "$@"; do [ -r "/proc/$p/stat" ] && t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done; echo "$t"; }
sys_of() { local t=0; for p in "$@"; do [ -r "/proc/$p/stat" ] && t=$((t + $(awk '{print $15}' "/proc/$p/stat"))); done; echo "$t"; }

# run WSGI_APP: start gunicorn on it, warm up, run wrk; prints the warm-up's and the run's RESULT lines,
# the latter with the CPU each request cost in gunicorn and in PostgreSQL (cpu_gunicorn_us, cpu_pg_us).
run() {
  .venv/bin/gunicorn "$1" --bind "127.0.0.1:$PORT" --workers "$WORKERS" --threads "$THREADS" \
    --worker-class gthread --keep-alive 30 --max-requests 0 --log-level warning &
  GUNICORN_PID=$!
  for _ in $(seq 1 50); do curl -fs "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1 && break; sleep 0.2; done
  BENCH_SEED="$SEED" wrk -t2 -c16 -d"${WARMUP}s" -s bench/redirect.lua "http://127.0.0.1:$PORT" | grep '^RESULT' | sed 's/^RESULT/WARMUP/'
  local workers pgs w0 p0 s0 out
  workers=$(pgrep -P "$GUNICORN_PID" | tr '\n' ' ')
  pgs=$(psql "$DATABASE_URL" -tAc "SELECT pid FROM pg_stat_activity WHERE datname = '$BENCH_DB' AND pid <> pg_backend_pid()" | tr '\n' ' ')
  w0=$(cpu_of $workers); p0=$(cpu_of $pgs); s0=$(sys_of $workers)
  out=$(BENCH_SEED="$SEED" wrk -t2 -c16 -d"${SECONDS_RUN}s" --latency -s bench/redirect.lua "http://127.0.0.1:$PORT" | grep '^RESULT')
  echo "$out" | awk -v w=$(( $(cpu_of $workers) - w0 )) -v p=$(( $(cpu_of $pgs) - p0 )) -v s=$(( $(sys_of $workers) - s0 )) \
      -v hz="$(getconf CLK_TCK)" '{
    split($2, kv, "="); n = kv[2]
    printf "%s cpu_gunicorn_us=%.0f (kernel %.0f) cpu_pg_us=%.0f\n", $0, w / hz / n * 1e6, s / hz / n * 1e6, p / hz / n * 1e6 }'
  stop
}
field() { echo "$1" | sed -E "s/.* $2=([0-9.]+).*/\1/"; }

echo "bench: gunicorn $WORKERS workers x $THREADS threads; $ROUNDS rounds of floor then redirect, each a ${WARMUP}s warm-up and wrk -t2 -c16 -d${SECONDS_RUN}s; load $(cut -d' ' -f1-3 /proc/loadavg)"
# This host's speed drifts within minutes: the two are measured in turns, and each round gives a ratio.
for round in $(seq 1 "$ROUNDS"); do
  FLOOR=$(BENCH_FLOOR=django run bench.floor:application | grep '^RESULT')
  echo "bench: $round floor    ${FLOOR#RESULT }"
  BEFORE=$(psql "$DATABASE_URL" -tAc "SELECT coalesce(max(id), 0) FROM clicks_click")
  OUT=$(run lftrack.wsgi)
  WARM=$(echo "$OUT" | grep '^WARMUP'); MAIN=$(echo "$OUT" | grep '^RESULT')
  echo "bench: $round redirect ${MAIN#RESULT }"
  # The clicks of one statement share its now(): distinct times count the statements (batches) that stored them.
  read -r STORED STATEMENTS < <(psql "$DATABASE_URL" -tA -F' ' -c "SELECT count(*), count(DISTINCT created_at) FROM clicks_click WHERE id > $BEFORE")
  ANSWERED=$(( $(field "$WARM" requests) - $(field "$WARM" non3xx) + $(field "$MAIN" requests) - $(field "$MAIN" non3xx) ))
  awk -v n="$round" -v r="$(field "$MAIN" rps)" -v f="$(field "$FLOOR" rps)" -v p99="$(field "$MAIN" p99_ms)" \
      -v bad="$(field "$MAIN" non3xx)" -v stored="$STORED" -v answered="$ANSWERED" -v statements="$STATEMENTS" 'BEGIN {
    # Stored may pass answered by the requests in flight when wrk stopped (16 at most): wrk never saw their 302.
    printf "bench: %d redirect / floor = %.2f; p99 %.1f ms; %d not 302; %d clicks stored for %d 302s, %.1f a statement\n", n, r / f, p99, bad, stored, answered, stored / (statements ? statements : 1)
    ok = r / f >= 0.7 && p99 < 15 && bad == 0 && stored >= answered
    printf "bench: %d target (>= 0.7 x floor, p99 < 15 ms, only 302s, every 302 stored): %s\n", n, ok ? "met" : "missed" }'
done
echo "bench: load after $(cut -d' ' -f1-3 /proc/loadavg)"
