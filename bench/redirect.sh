#!/usr/bin/env bash
# Benchmark GET /l/<key>: lftrack's redirect on its two worker classes beside the limit reference, in turns.
#
#   bash bench/redirect.sh                                   # 3 rounds at 16 connections
#   BENCH_CONNECTIONS=64 BENCH_SYSTEMS="gevent limit" bash bench/redirect.sh
#
# Creates its own database (BENCH_DB, dropped and re-created), migrates, seeds BENCH_LINKS links, then in
# BENCH_ROUNDS rounds starts each of BENCH_SYSTEMS in turn on 127.0.0.1 with the project's own
# gunicorn.conf.py (the production shape; BENCH_WORKERS processes), warms up for BENCH_WARMUP s and runs
# `wrk -t2 -c$BENCH_CONNECTIONS` for BENCH_SECONDS with bench/redirect.lua (random links, browsers and
# bots, X-Forwarded-For over 250 addresses behind TRUSTED_PROXY_COUNT=1; the per-address click limit
# raised but counted on Redis). The systems:
#   gevent   lftrack, gunicorn.conf.py as it is (the gevent worker: the redirect's production pool)
#   django   lftrack on gevent through Django's handler only (lftrack.wsgi:django_application), as before
#            clicks/wsgi.py answered the redirect's GET ahead of it
#   django-gthread  the same on gthread (BENCH_THREADS threads): the redirect as it was served before issue #32
#   pywsgi   lftrack on gunicorn's gevent_pywsgi worker class (gevent's own HTTP server in place of gunicorn's parser)
#   gevent-nginx  lftrack on gevent behind the shipped front, deploy/nginx.conf (nginx's workers: one a core),
#            wrk sending to nginx; CPU per request is gunicorn's and nginx's (cpu_nginx_us)
#   gthread  lftrack, GUNICORN_WORKER_CLASS=gthread (BENCH_THREADS threads: the API pool's shape)
#   limit    bench/limit_reference.py: a bare WSGI app, one durable INSERT and a 302 per request
#            (gthread, BENCH_THREADS threads)
#   floor    bench/floor.py's `django` level: a 302 from a plain view behind every middleware, nothing stored
#   gevent-N lftrack on gevent with batches of at most N clicks (bench/redirect_batch.py; 16 in production)
#   yourls   a peer: YOURLS, a PHP URL shortener that stores each visit before it answers (it reads the link,
#            commits an UPDATE of its click count, then an INSERT into its log), on nginx + PHP-FPM
#            (2 workers a core) + the host's MariaDB, started and seeded by bench/peer_yourls.sh on 127.0.0.1:8767
#            with as many links as lftrack's (its own keys: YOURLS's keywords are [0-9a-zA-Z]); wrk asks for
#            /<keyword>, expects 301s, and its CPU per request is PHP-FPM's workers', nginx's and MariaDB's
#   BENCH_SYSTEMS="gevent yourls limit" bash bench/redirect.sh    # lftrack beside YOURLS and the limit reference
# Prints each run (req/s, p99, CPU per request in gunicorn and PostgreSQL), the rows stored against the
# 302s answered (a 302 without a click id stores nothing: the share untracked, the overload policy in
# docs/deployment.md), and per round each system's ratio to the limit reference and gevent's to gthread
# (and to yourls).
# Needs PostgreSQL and Redis (as in .ci/run); installs wrk. BENCH_REUSE_DB=1 runs against an existing
# database as it is (e.g. BENCH_DB=lftrack_growth, grown by bench/seed_growth.sh), adding only this
# run's own workspace and links, and keeps it.
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
CONNECTIONS=${BENCH_CONNECTIONS:-16}
SYSTEMS=${BENCH_SYSTEMS:-gthread gevent limit}
PY=.venv/bin/python
SEED=$(mktemp)
YOURLS_SEED=$(mktemp)

command -v wrk >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null; }
[ -x "$PY" ] || make install

export DATABASE_URL="$PG_URL/$BENCH_DB" REDIS_URL=${BENCH_REDIS_URL:-redis://127.0.0.1:6379/15}
export SECRET_KEY=bench-only-secret-key-not-for-production ENV_FILE=
export DEBUG=0 ALLOWED_HOSTS=127.0.0.1 LOG_LEVEL=WARNING CONN_MAX_AGE=600 TRUSTED_PROXY_COUNT=1
export RATELIMIT_REDIRECT_IP=${BENCH_RATELIMIT_IP:-10000000/m}

GUNICORN_PID="" NGINX_PID=""
NGINX_PORT=${BENCH_NGINX_PORT:-8768}
stop() {
  if [ -n "$GUNICORN_PID" ] && kill -0 "$GUNICORN_PID" 2>/dev/null; then kill "$GUNICORN_PID"; wait "$GUNICORN_PID" 2>/dev/null || true; fi
  if [ -n "$NGINX_PID" ] && kill -0 "$NGINX_PID" 2>/dev/null; then kill "$NGINX_PID"; wait "$NGINX_PID" 2>/dev/null || true; fi
  GUNICORN_PID="" NGINX_PID=""
}
cleanup() {
  stop
  case " $SYSTEMS " in *" yourls "*) bash bench/peer_yourls.sh stop || true ;; esac
  rm -f "$SEED" "$YOURLS_SEED"
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
from clicks.links import link_add
from workspaces.services import workspace_create
workspace = workspace_create(slug=f'bench-{secrets.token_hex(4)}', name='Benchmark')
keys = [link_add(workspace=workspace, destination=f'https://shop.example.com/p/{i}?utm_source=bench', post_title=f'Post {i % 20}').key
        for i in range(${BENCH_LINKS:-200})]
open('$SEED', 'w').write('\n'.join(keys) + '\n')
"
psql "$DATABASE_URL" -qc "VACUUM ANALYZE" >/dev/null
case " $SYSTEMS " in *" yourls "*)
  bash bench/peer_yourls.sh up && bash bench/peer_yourls.sh seed "$SEED" "$YOURLS_SEED" && bash bench/peer_yourls.sh stop ;;
esac

# CPU seconds (user + system, in clock ticks) used so far by processes: gunicorn's workers, PostgreSQL's backends.
# A process may end between the test and the read (a gevent greenlet's backend): it counts 0.
cpu_of() { local t=0 v; for p in "$@"; do v=$(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null); t=$((t + ${v:-0})); done; echo "$t"; }
sys_of() { local t=0 v; for p in "$@"; do v=$(awk '{print $15}' "/proc/$p/stat" 2>/dev/null); t=$((t + ${v:-0})); done; echo "$t"; }

# run SYSTEM: start gunicorn with gunicorn.conf.py on it, warm up, run wrk; prints the warm-up's and the run's
# RESULT lines, the latter with the CPU each request cost in gunicorn and in PostgreSQL (cpu_gunicorn_us, cpu_pg_us).
run() {
  [ "$1" = yourls ] && { run_yourls; return; }
  local app=lftrack.wsgi class=gevent target=$PORT front="" proxies=1
  case "$1" in
    gthread) class=gthread ;;
    pywsgi) class=gevent_pywsgi ;;
    limit) app=bench.limit_reference:application; class=gthread ;;
    floor) app=bench.floor:application; class=gthread ;;
    gevent-nginx) target=$NGINX_PORT proxies=2 ;;  # nginx appends its client (wrk) to X-Forwarded-For
    gevent-*) app=bench.redirect_batch:application ;;
    django) app=lftrack.wsgi:django_application ;;
    django-gthread) app=lftrack.wsgi:django_application; class=gthread ;;
  esac
  TRUSTED_PROXY_COUNT=$proxies BENCH_MAX_BATCH=${1#gevent-} BENCH_FLOOR=django GUNICORN_WORKER_CLASS=$class GUNICORN_BIND="127.0.0.1:$PORT" WEB_CONCURRENCY=$WORKERS \
    GUNICORN_THREADS=$THREADS GUNICORN_KEEPALIVE=30 GUNICORN_MAX_REQUESTS=0 GUNICORN_LOG_LEVEL=warning \
    .venv/bin/gunicorn -c gunicorn.conf.py "$app" &
  GUNICORN_PID=$!
  for _ in $(seq 1 150); do curl -fs "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1 && break; sleep 0.2; done
  curl -fs "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1 || { echo "bench: $1 did not start within 30 s" >&2; stop; exit 1; }
  if [ "$target" = "$NGINX_PORT" ]; then start_nginx; front=$(pgrep -P "$NGINX_PID" | tr '\n' ' '); fi
  BENCH_SEED="$SEED" wrk -t2 -c"$CONNECTIONS" -d"${WARMUP}s" -s bench/redirect.lua "http://127.0.0.1:$target" | grep '^RESULT' | sed 's/^RESULT/WARMUP/'
  local workers pgs w0 p0 s0 n0 out
  workers=$(pgrep -P "$GUNICORN_PID" | tr '\n' ' ')
  pgs=$(psql "$DATABASE_URL" -tAc "SELECT pid FROM pg_stat_activity WHERE datname = '$BENCH_DB' AND pid <> pg_backend_pid()" | tr '\n' ' ')
  w0=$(cpu_of $workers); p0=$(cpu_of $pgs); s0=$(sys_of $workers); n0=$(cpu_of $front)
  out=$(BENCH_SEED="$SEED" wrk -t2 -c"$CONNECTIONS" -d"${SECONDS_RUN}s" --latency -s bench/redirect.lua "http://127.0.0.1:$target" | grep '^RESULT')
  echo "$out" | awk -v w=$(( $(cpu_of $workers) - w0 )) -v p=$(( $(cpu_of $pgs) - p0 )) -v s=$(( $(sys_of $workers) - s0 )) \
      -v f=$(( $(cpu_of $front) - n0 )) -v front="$front" -v class="$class" -v hz="$(getconf CLK_TCK)" '{
    split($2, kv, "="); n = kv[2]
    printf "%s cpu_gunicorn_us=%.0f (kernel %.0f)", $0, w / hz / n * 1e6, s / hz / n * 1e6
    # The backends of a gevent pool belong to its client connections, opened during the run: not sampled.
    if (class != "gevent") printf " cpu_pg_us=%.0f", p / hz / n * 1e6
    if (front != "") printf " cpu_nginx_us=%.0f", f / hz / n * 1e6
    printf "\n" }'
  stop
}
# start_nginx: deploy/nginx.conf as shipped, on NGINX_PORT in front of gunicorn's PORT (both of its upstreams), in a
# scratch prefix, as tests/faults/test_front_proxy.py runs it.
start_nginx() {
  local temp
  temp=$(mktemp -d) && chmod 777 "$temp"
  sed -e "s/listen 80;/listen 127.0.0.1:$NGINX_PORT;/" -e "s/server 127.0.0.1:800[01];/server 127.0.0.1:$PORT;/" deploy/nginx.conf > "$temp/site.conf"
  # BENCH_NGINX_KEEPALIVE=0: no kept connections to gunicorn (what deploy/nginx.conf's `keepalive` lines save).
  [ "${BENCH_NGINX_KEEPALIVE:-1}" = 0 ] && sed -i -e '/^ *keepalive [0-9]*;/d' "$temp/site.conf"
  cat > "$temp/nginx.conf" <<CONF
daemon off; worker_processes auto; pid $temp/nginx.pid; error_log $temp/error.log warn;
events { worker_connections 1024; }
http { access_log off; client_body_temp_path $temp/body; proxy_temp_path $temp/proxy; include $temp/site.conf; }
CONF
  nginx -c "$temp/nginx.conf" -p "$temp" &
  NGINX_PID=$!
  for _ in $(seq 1 50); do curl -fs "http://127.0.0.1:$NGINX_PORT/healthz" >/dev/null 2>&1 && return; sleep 0.1; done
  echo "bench: nginx did not start (see $temp/error.log)" >&2; stop; exit 1
}
# run_yourls: the same for YOURLS (bench/peer_yourls.sh), started afresh for the run and stopped after it; the run's
# CPU per request in PHP-FPM's workers, nginx's workers and MariaDB (cpu_phpfpm_us, cpu_nginx_us, cpu_mariadb_us).
run_yourls() {
  local url=http://127.0.0.1:${BENCH_YOURLS_PORT:-8767} fpm web db f0 n0 d0 s0 out
  bash bench/peer_yourls.sh up >/dev/null
  BENCH_SEED="$YOURLS_SEED" BENCH_PATH_PREFIX=/ BENCH_EXPECT_STATUS=301 wrk -t2 -c"$CONNECTIONS" -d"${WARMUP}s" -s bench/redirect.lua "$url" | grep '^RESULT' | sed 's/^RESULT/WARMUP/'
  fpm=$(bash bench/peer_yourls.sh pids php-fpm); web=$(bash bench/peer_yourls.sh pids nginx); db=$(bash bench/peer_yourls.sh pids mariadb)
  f0=$(cpu_of $fpm); n0=$(cpu_of $web); d0=$(cpu_of $db); s0=$(sys_of $fpm)
  out=$(BENCH_SEED="$YOURLS_SEED" BENCH_PATH_PREFIX=/ BENCH_EXPECT_STATUS=301 wrk -t2 -c"$CONNECTIONS" -d"${SECONDS_RUN}s" --latency -s bench/redirect.lua "$url" | grep '^RESULT')
  echo "$out" | awk -v f=$(( $(cpu_of $fpm) - f0 )) -v n=$(( $(cpu_of $web) - n0 )) -v d=$(( $(cpu_of $db) - d0 )) -v s=$(( $(sys_of $fpm) - s0 )) \
      -v hz="$(getconf CLK_TCK)" '{
    split($2, kv, "="); r = kv[2]
    printf "%s cpu_phpfpm_us=%.0f (kernel %.0f) cpu_nginx_us=%.0f cpu_mariadb_us=%.0f\n", $0, f / hz / r * 1e6, s / hz / r * 1e6, n / hz / r * 1e6, d / hz / r * 1e6 }'
  bash bench/peer_yourls.sh stop
}
field() { echo "$1" | sed -E "s/.* $2=([0-9.]+).*/\1/"; }
stored_rows() {
  case "$1" in
    limit) psql "$DATABASE_URL" -tAc "SELECT coalesce(max(id), 0) FROM bench_limit_click" 2>/dev/null || echo 0 ;;
    floor) echo 0 ;;
    yourls) bash bench/peer_yourls.sh rows ;;
    *) psql "$DATABASE_URL" -tAc "SELECT coalesce(max(id), 0) FROM clicks_click" ;;
  esac
}

.venv/bin/python -c "import bench.limit_reference" # its table, before the first round counts rows
PEERS=""
case " $SYSTEMS " in *" yourls "*) PEERS="; yourls on nginx + PHP-FPM (bench/peer_yourls.sh)" ;; esac
echo "bench: $SYSTEMS on gunicorn.conf.py ($WORKERS workers; gthread x $THREADS threads$PEERS); $ROUNDS rounds, each a ${WARMUP}s warm-up and wrk -t2 -c$CONNECTIONS -d${SECONDS_RUN}s; load $(cut -d' ' -f1-3 /proc/loadavg)"
# This host's speed drifts within minutes: the systems are measured in turns, and each round gives ratios.
for round in $(seq 1 "$ROUNDS"); do
  declare -A RPS=()
  for system in $SYSTEMS; do
    BEFORE=$(stored_rows "$system")
    OUT=$(run "$system")
    WARM=$(echo "$OUT" | grep '^WARMUP'); MAIN=$(echo "$OUT" | grep '^RESULT')
    # ids are sequential: rows above the mark are this run's (warm-up and run), against the 302s wrk saw
    # (YOURLS: the count of its log's rows against its 301s).
    STORED=$(( $(stored_rows "$system") - BEFORE ))
    # The clicks of one statement share its now(): distinct times count the statements (batches) that stored them.
    BATCH=""
    case "$system" in limit|floor|yourls) ;; *)
      BATCH="; $(psql "$DATABASE_URL" -tAc "SELECT round(count(*)::numeric / greatest(count(DISTINCT created_at), 1), 1) FROM clicks_click WHERE id > $BEFORE") clicks a statement" ;;
    esac
    ANSWERED=$(( $(field "$WARM" requests) - $(field "$WARM" non3xx) + $(field "$MAIN" requests) - $(field "$MAIN" non3xx) ))
    RPS[$system]=$(field "$MAIN" rps)
    # Stored may pass answered by the requests in flight when wrk stopped (one per connection at most).
    awk -v round="$round" -v sys_name="$system" -v main="${MAIN#RESULT }" -v stored="$STORED" -v answered="$ANSWERED" \
        -v loadavg="$(cut -d' ' -f1 /proc/loadavg)" -v batch="$BATCH" -v code="$([ "$system" = yourls ] && echo 301 || echo 302)" 'BEGIN {
      untracked = sys_name == "floor" ? 0 : (answered > stored ? (answered - stored) / answered * 100 : 0)
      printf "bench: %d %-14s %s; load %s; %d rows stored for %d %ss (untracked %.1f%%)%s\n", round, sys_name, main, loadavg, stored, answered, code, untracked, batch }'
  done
  line="bench: $round ratios:"
  for system in $SYSTEMS; do
    [ "$system" != limit ] && [ -n "${RPS[limit]:-}" ] && line="$line $system/limit=$(awk -v a="${RPS[$system]}" -v b="${RPS[limit]}" 'BEGIN { printf "%.2f", a / b }')"
  done
  [ -n "${RPS[gevent]:-}" ] && [ -n "${RPS[gthread]:-}" ] && line="$line gevent/gthread=$(awk -v a="${RPS[gevent]}" -v b="${RPS[gthread]}" 'BEGIN { printf "%.2f", a / b }')"
  [ -n "${RPS[gevent]:-}" ] && [ -n "${RPS[gevent-nginx]:-}" ] && line="$line gevent-nginx/gevent=$(awk -v a="${RPS[gevent-nginx]}" -v b="${RPS[gevent]}" 'BEGIN { printf "%.2f", a / b }')"
  for base in django django-gthread yourls; do
    [ -n "${RPS[gevent]:-}" ] && [ -n "${RPS[$base]:-}" ] && line="$line gevent/$base=$(awk -v a="${RPS[gevent]}" -v b="${RPS[$base]}" 'BEGIN { printf "%.2f", a / b }')"
  done
  echo "$line"
done
echo "bench: load after $(cut -d' ' -f1-3 /proc/loadavg)"
