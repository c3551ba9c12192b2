#!/usr/bin/env bash
# Time the back office's heaviest pages over HTTP against gunicorn + PostgreSQL, as a workspace owner:
#
#   BENCH_DB=lftrack_growth bash bench/admin_pages.sh     # the grown database (bench/seed_growth.sh)
#   BENCH_DB=lftrack_small bash bench/admin_pages.sh      # any other migrated database
#
# Uses the workspace with the most contacts; logs in by minting a session for an owner of it (no
# password round trip), warms each page up, then prints the median and 90th percentile of
# BENCH_REPEAT requests per page. Stops the gunicorn it started.
set -euo pipefail
cd "$(dirname "$0")/.."
PG_URL=${BENCH_PG_URL:-postgres://postgres@127.0.0.1:5432}
DB=${BENCH_DB:-lftrack_growth}
PORT=${BENCH_PORT:-8766}
REPEAT=${BENCH_REPEAT:-20}
export DATABASE_URL="$PG_URL/$DB" SECRET_KEY=bench-only-secret-key-not-for-production
export DEBUG=0 ALLOWED_HOSTS=127.0.0.1 LOG_LEVEL=WARNING CONN_MAX_AGE=600

read -r SESSION CONTACT CAMPAIGN POST < <(.venv/bin/python manage.py shell --no-imports -v 0 -c '
from django.contrib.auth import get_user_model, HASH_SESSION_KEY, SESSION_KEY, BACKEND_SESSION_KEY
from django.contrib.sessions.backends.db import SessionStore
from django.db.models import Count
from campaigns.models import Campaign
from customers.models import Customer
from workspaces.models import Membership, Workspace
ws = Workspace.objects.annotate(n=Count("customers")).order_by("-n").first()
user, _ = get_user_model().objects.get_or_create(username="bench-owner", defaults={"is_staff": True})
user.set_unusable_password(); user.is_staff = True; user.save()
Membership.objects.update_or_create(user=user, workspace=ws, defaults={"role": "owner"})
s = SessionStore()
s[SESSION_KEY] = str(user.pk); s[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
s[HASH_SESSION_KEY] = user.get_session_auth_hash(); s.create()
contact = Customer.objects.filter(workspace=ws, conversions__isnull=False).order_by("pk").first()
campaign = Campaign.objects.filter(workspace=ws).annotate(n=Count("enrollments")).order_by("-n").first()
from clicks.models import Post
post = Post.objects.filter(workspace=ws).order_by("pk").first()
print(s.session_key, contact.pk, campaign.pk if campaign else 0, post.pk if post else 0)
')

.venv/bin/gunicorn lftrack.wsgi --bind "127.0.0.1:$PORT" --workers 2 --log-level warning &
GUNICORN_PID=$!
trap 'kill $GUNICORN_PID 2>/dev/null; wait $GUNICORN_PID 2>/dev/null || true' EXIT
for _ in $(seq 1 50); do curl -fs "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1 && break; sleep 0.2; done

echo "admin pages on $DB: $(psql "$DATABASE_URL" -tAc 'SELECT count(*) FROM customers_customer') customers," \
  "$(psql "$DATABASE_URL" -tAc 'SELECT count(*) FROM conversions_conversionevent') events," \
  "$(psql "$DATABASE_URL" -tAc 'SELECT count(*) FROM campaigns_enrollment') enrollments; load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-34s %6s %9s %9s\n' page status "p50 ms" "p90 ms"
for page in \
  "contacts list|/admin/customers/customer/" \
  "contacts search|/admin/customers/customer/?q=person4242" \
  "contacts search, 1 match in both|/admin/customers/customer/?q=person4242%40" \
  "contacts filter (source=pixel)|/admin/customers/customer/?source__exact=pixel" \
  "contacts by net revenue|/admin/customers/customer/?o=-7" \
  "contacts by leads|/admin/customers/customer/?o=-5" \
  "contact page|/admin/customers/customer/$CONTACT/change/" \
  "conversions list|/admin/conversions/conversionevent/" \
  "conversions, 7 days|/admin/conversions/conversionevent/?since=$(date -u -d '7 days ago' +%F)&until=$(date -u +%F)" \
  "recipients list|/admin/campaigns/enrollment/?campaign__id__exact=$CAMPAIGN" \
  "recipients (state=active)|/admin/campaigns/enrollment/?campaign__id__exact=$CAMPAIGN&state__exact=active" \
  "campaigns list|/admin/campaigns/campaign/" \
  "campaign page|/admin/campaigns/campaign/$CAMPAIGN/change/" \
  "posts list|/admin/clicks/post/" \
  "dashboard, 7 days|/admin/?range=7" \
  "dashboard, 30 days|/admin/?range=30" \
  "dashboard, 90 days|/admin/?range=90" \
  "dashboard, 90 days, a campaign|/admin/?range=90&campaign=$CAMPAIGN" \
  "dashboard, 90 days, a post|/admin/?range=90&post=$POST" \
  ; do
  name=${page%%|*}; path=${page#*|}
  url="http://127.0.0.1:$PORT$path"
  for _ in 1 2; do curl -s -o /dev/null -b "sessionid=$SESSION" "$url"; done
  status=$(curl -s -o /dev/null -w '%{http_code}' -b "sessionid=$SESSION" "$url")
  times=$(for _ in $(seq 1 "$REPEAT"); do curl -s -o /dev/null -w '%{time_total}\n' -b "sessionid=$SESSION" "$url"; done | sort -n)
  p50=$(echo "$times" | awk -v n="$REPEAT" 'NR == int((n + 1) / 2) {printf "%.1f", $1 * 1000}')
  p90=$(echo "$times" | awk -v n="$REPEAT" 'NR == int(n * 0.9) {printf "%.1f", $1 * 1000}')
  printf '%-34s %6s %9s %9s\n' "$name" "$status" "$p50" "$p90"
done
