#!/usr/bin/env bash
# Time GET /api/v1/analytics over HTTP against gunicorn + PostgreSQL, on a grown database and a small one:
#
#   BENCH_DB=lftrack_growth bash bench/analytics.sh     # the grown database (bench/seed_growth.sh)
#   BENCH_DB=lftrack_small bash bench/analytics.sh      # the small baseline, or any other migrated database
#
# Uses the workspace with the most clicks and a read token minted for it (revoked at the end), runs
# `roll_up_numbers` first (as cron does every minute) and ANALYZE (as autovacuum does), then adds BENCH_TAIL clicks and events that are not
# rolled up yet (the live tail a request reads), warms each query up and prints the median and 90th
# percentile of BENCH_REPEAT requests. Stops the gunicorn it started.
set -euo pipefail
cd "$(dirname "$0")/.."
PG_URL=${BENCH_PG_URL:-postgres://postgres@127.0.0.1:5432}
DB=${BENCH_DB:-lftrack_growth}
PORT=${BENCH_PORT:-8767}
REPEAT=${BENCH_REPEAT:-20}
TAIL=${BENCH_TAIL:-1000}
export DATABASE_URL="$PG_URL/$DB" SECRET_KEY=bench-only-secret-key-not-for-production
export DEBUG=0 ALLOWED_HOSTS=127.0.0.1 LOG_LEVEL=WARNING CONN_MAX_AGE=600 RATELIMIT_READ_TOKEN=100000/m RATELIMIT_READ_IP=100000/m
export REDIS_URL=${BENCH_REDIS_URL:-redis://127.0.0.1:6379/15}

.venv/bin/python manage.py roll_up_numbers >/dev/null
psql "$DATABASE_URL" -qc "ANALYZE rollups_dailytotals" -c "ANALYZE rollups_dailybreakdowns" -c "ANALYZE rollups_workspacebreakdowns" >/dev/null  # what autovacuum does after a big roll-up
read -r TOKEN TOKEN_ID LINK CAMPAIGN < <(.venv/bin/python manage.py shell --no-imports -v 0 -c '
from django.db.models import Count
from campaigns.models import Campaign
from clicks.models import Click, Link
from workspaces.models import Workspace
from workspaces.tokens import api_token_create
ws = Workspace.objects.get(pk=Click.objects.values("workspace_id").annotate(n=Count("*")).order_by("-n")[0]["workspace_id"])
issued = api_token_create(workspace=ws, name="bench analytics", scopes=["read"])
link = Link.objects.filter(workspace=ws).order_by("pk").first()
campaign = Campaign.objects.filter(workspace=ws).order_by("pk").first()
print(issued.secret, issued.token.pk, link.pk, campaign.slug if campaign else "none")
')
# The live tail: clicks and sales since the last roll-up, spread over the workspace's links.
psql "$DATABASE_URL" -qc "
INSERT INTO clicks_click (workspace_id, link_id, click_id, created_at, user_agent, referrer, country, utm_source)
SELECT l.workspace_id, l.id, md5(g::text || random()::text), now(), 'bench-tail', '', 'GB', l.utm_source
FROM generate_series(1, $TAIL) g JOIN LATERAL (SELECT * FROM clicks_link WHERE id = $LINK + g % 100) l ON true;
INSERT INTO conversions_conversionevent (workspace_id, click_id, link_id, event, value_cents, event_name, meta, occurred_at, channel, currency)
SELECT workspace_id, id, link_id, 'sale', 4900, '', '{}', now(), 'api', 'EUR' FROM clicks_click WHERE user_agent = 'bench-tail'
  AND NOT EXISTS (SELECT 1 FROM conversions_conversionevent e WHERE e.click_id = clicks_click.id);" >/dev/null

.venv/bin/gunicorn lftrack.wsgi --bind "127.0.0.1:$PORT" --workers 2 --log-level warning &
GUNICORN_PID=$!
cleanup() {
  kill $GUNICORN_PID 2>/dev/null; wait $GUNICORN_PID 2>/dev/null || true
  .venv/bin/python manage.py token revoke "$(psql "$DATABASE_URL" -tAc "SELECT w.slug FROM workspaces_apitoken t JOIN workspaces_workspace w ON w.id = t.workspace_id WHERE t.id = $TOKEN_ID")" "$TOKEN_ID" >/dev/null
}
trap cleanup EXIT
for _ in $(seq 1 50); do curl -fs "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1 && break; sleep 0.2; done

echo "analytics on $DB: $(psql "$DATABASE_URL" -tAc 'SELECT count(*) FROM clicks_click') clicks," \
  "$(psql "$DATABASE_URL" -tAc 'SELECT count(*) FROM conversions_conversionevent') events," \
  "$(psql "$DATABASE_URL" -tAc 'SELECT count(*) FROM rollups_dailytotals') daily totals rows," \
  "$(psql "$DATABASE_URL" -tAc 'SELECT count(*) FROM rollups_dailybreakdowns') breakdown rows, $TAIL in the tail;" \
  "load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-34s %6s %9s %9s\n' query status "p50 ms" "p90 ms"
for query in \
  "30 days per day|" \
  "30 days per link|group_by=link" \
  "30 days per post|group_by=post" \
  "30 days per campaign|group_by=campaign" \
  "30 days per country|group_by=country" \
  "30 days per UTM source|group_by=utm_source" \
  "30 days per UTM campaign|group_by=utm_campaign" \
  "30 days per tag|group_by=tag" \
  "a campaign, 30 days per country|campaign=$CAMPAIGN&group_by=country" \
  "366 days per country|since=$(date -u -d '-365 days' +%F)&group_by=country" \
  "a link, 30 days per day|link_id=$LINK" \
  "a campaign, 30 days per post|campaign=$CAMPAIGN&group_by=post" \
  "366 days per day|since=$(date -u -d '-365 days' +%F)" \
  ; do
  name=${query%%|*}; params=${query#*|}
  url="http://127.0.0.1:$PORT/api/v1/analytics?$params"
  for _ in 1 2; do curl -s -o /dev/null -H "Authorization: Bearer $TOKEN" "$url"; done
  status=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $TOKEN" "$url")
  times=$(for _ in $(seq 1 "$REPEAT"); do curl -s -o /dev/null -w '%{time_total}\n' -H "Authorization: Bearer $TOKEN" "$url"; done | sort -n)
  p50=$(echo "$times" | awk -v n="$REPEAT" 'NR == int((n + 1) / 2) {printf "%.1f", $1 * 1000}')
  p90=$(echo "$times" | awk -v n="$REPEAT" 'NR == int(n * 0.9) {printf "%.1f", $1 * 1000}')
  printf '%-34s %6s %9s %9s\n' "$name" "$status" "$p50" "$p90"
done
