#!/usr/bin/env bash
# Does a heavy back-office page stall the redirect? (docs/benchmarks.md, "The redirect beside the dashboard")
#
#   BENCH_DB=lftrack_small BENCH_CUSTOMERS=10000 BENCH_EVENTS=300000 bash bench/seed_growth.sh   # once
#   BENCH_DB=lftrack_small bash bench/redirect_beside_dashboard.sh
#
# In BENCH_ROUNDS rounds, three setups in turn, each `wrk -t2 -c$BENCH_CONNECTIONS -d${BENCH_SECONDS}s` on the
# redirect (bench/redirect.lua over the database's links) against the redirect pool (gunicorn.conf.py, gevent,
# BENCH_WORKERS processes):
#   alone     nothing else
#   one-pool  BENCH_PAGE_LOOPS clients loading the 90-day dashboard from the same gevent pool, back to back
#   two-pools the same clients against a second pool (GUNICORN_WORKER_CLASS=gthread), as deploy/nginx.conf routes
# and prints the redirect's req/s and p50/p99/max, and how many dashboards were served and their median time.
# A page holds a gevent process's one thread for its whole length: a redirect that lands on that process waits.
set -euo pipefail
cd "$(dirname "$0")/.."
PG_URL=${BENCH_PG_URL:-postgres://postgres@127.0.0.1:5432}
DB=${BENCH_DB:-lftrack_small}
PORT=${BENCH_PORT:-8766}
PAGES_PORT=$((PORT + 1))
ROUNDS=${BENCH_ROUNDS:-3}
SECONDS_RUN=${BENCH_SECONDS:-10}
WORKERS=${BENCH_WORKERS:-2}
CONNECTIONS=${BENCH_CONNECTIONS:-16}
LOOPS=${BENCH_PAGE_LOOPS:-2}
PAGE=${BENCH_PAGE:-/admin/?range=90}
SEED=$(mktemp)
PAGES=$(mktemp -d)

command -v wrk >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null; }
[ -x .venv/bin/python ] || make install
export DATABASE_URL="$PG_URL/$DB" REDIS_URL=${BENCH_REDIS_URL:-redis://127.0.0.1:6379/15}
export SECRET_KEY=bench-only-secret-key-not-for-production ENV_FILE=
export DEBUG=0 ALLOWED_HOSTS=127.0.0.1 LOG_LEVEL=WARNING CONN_MAX_AGE=600 TRUSTED_PROXY_COUNT=1
export RATELIMIT_REDIRECT_IP=10000000/m

PIDS=()
stop_all() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  PIDS=()
}
trap 'stop_all; rm -rf "$SEED" "$PAGES"' EXIT

# An owner's session on the workspace with the most clicks (no password round trip), and that workspace's links.
SESSION=$(.venv/bin/python manage.py shell --no-imports -v 0 -c "
from django.contrib.auth import get_user_model, HASH_SESSION_KEY, SESSION_KEY, BACKEND_SESSION_KEY
from django.contrib.sessions.backends.db import SessionStore
from django.db.models import Count
from clicks.models import Link
from workspaces.models import Membership, Workspace
ws = Workspace.objects.annotate(n=Count('links__clicks')).order_by('-n').first()
open('$SEED', 'w').write('\n'.join(Link.objects.filter(workspace=ws).values_list('key', flat=True)[:200]) + '\n')
user, _ = get_user_model().objects.get_or_create(username='bench-owner', defaults={'is_staff': True})
user.set_unusable_password(); user.is_staff = True; user.save()
Membership.objects.update_or_create(user=user, workspace=ws, defaults={'role': 'owner'})
s = SessionStore()
s[SESSION_KEY] = str(user.pk); s[BACKEND_SESSION_KEY] = 'django.contrib.auth.backends.ModelBackend'
s[HASH_SESSION_KEY] = user.get_session_auth_hash(); s.create()
print(s.session_key)
")
.venv/bin/python manage.py roll_up_numbers >/dev/null

pool() {  # pool CLASS PORT: a gunicorn from gunicorn.conf.py, started and waited for
  GUNICORN_WORKER_CLASS=$1 GUNICORN_BIND="127.0.0.1:$2" WEB_CONCURRENCY=$WORKERS GUNICORN_KEEPALIVE=30 \
    GUNICORN_MAX_REQUESTS=0 GUNICORN_LOG_LEVEL=warning .venv/bin/gunicorn -c gunicorn.conf.py lftrack.wsgi &
  PIDS+=($!)
  for _ in $(seq 1 150); do curl -fs "http://127.0.0.1:$2/healthz" >/dev/null 2>&1 && return; sleep 0.2; done
  echo "bench: the $1 pool did not start" >&2
  exit 1
}

pages() {  # pages PORT: LOOPS clients loading the page back to back, each time in a file of its own
  for i in $(seq 1 "$LOOPS"); do
    (while :; do curl -s -o /dev/null -w '%{http_code} %{time_total}\n' -b "sessionid=$SESSION" "http://127.0.0.1:$1$PAGE"; done >"$PAGES/$i") &
    PIDS+=($!)
  done
}

echo "bench: redirect beside the dashboard ($PAGE) on $DB: $ROUNDS rounds, wrk -t2 -c$CONNECTIONS -d${SECONDS_RUN}s, $WORKERS gevent processes, $LOOPS page clients; load $(cut -d' ' -f1-3 /proc/loadavg)"
for round in $(seq 1 "$ROUNDS"); do
  for setup in alone one-pool two-pools; do
    rm -f "$PAGES"/*
    pool gevent "$PORT"
    BENCH_SEED="$SEED" wrk -t2 -c"$CONNECTIONS" -d3s -s bench/redirect.lua "http://127.0.0.1:$PORT" >/dev/null  # warm-up
    case "$setup" in
      one-pool) pages "$PORT" ;;
      two-pools) pool gthread "$PAGES_PORT"; pages "$PAGES_PORT" ;;
    esac
    sleep 1
    out=$(BENCH_SEED="$SEED" wrk -t2 -c"$CONNECTIONS" -d"${SECONDS_RUN}s" --latency -s bench/redirect.lua "http://127.0.0.1:$PORT" | grep '^RESULT')
    stop_all
    times=$(cat "$PAGES"/* 2>/dev/null | awk '$1 == 200 {print $2 * 1000}' | sort -n || true)
    served=$(echo "$times" | grep -c . || true)
    median=$(echo "$times" | awk 'NF {a[++n] = $1} END {if (n) printf "%.0f", a[int((n + 1) / 2)]; else print "-"}')
    echo "bench: $round $setup ${out#RESULT } pages=$served page_p50_ms=$median; load $(cut -d' ' -f1 /proc/loadavg)"
  done
done
