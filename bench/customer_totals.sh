#!/usr/bin/env bash
# Contact totals (docs/benchmarks.md, "Contact totals"), on a database grown by bench/seed_growth.sh:
#
#   BENCH_DB=lftrack_growth bash bench/customer_totals.sh
#
# 1. What the triggers of conversions/0011 cost an insert: pgbench inserts conversions (a sale in three, the rest
#    leads) of random seeded contacts on random seeded clicks, with the totals trigger disabled and enabled, in
#    alternating phases of BENCH_SECONDS (20) on one connection, without waiting for the disk at commit
#    (synchronous_commit off): what is left is PostgreSQL's work per insert, not the disk's.
# 2. The fill, conversions/0012 (batches of 2,000 contacts): 0011 and 0012 undone, 0011 applied, then 0012 timed
#    alone, BENCH_RUNS (2) times, while pgbench keeps inserting conversions of random contacts (triggers on): its
#    latency during the fill shows what the batches' locks cost a writer. Last, so the rows the trigger-less phases
#    inserted are counted again and the database stays true.
set -euo pipefail
cd "$(dirname "$0")/.."
PG_URL=${BENCH_PG_URL:-postgres://postgres@127.0.0.1:5432}
DB=${BENCH_DB:-lftrack_growth}
URL="$PG_URL/$DB"
SECONDS_EACH=${BENCH_SECONDS:-20}
export DATABASE_URL="$URL" SECRET_KEY=bench-only
read -r first last < <(psql "$URL" -Atqc "SELECT min(id) || ' ' || max(id) FROM customers_customer")
read -r click_first click_last < <(psql "$URL" -Atqc "SELECT min(id) || ' ' || max(id) FROM clicks_click")
script=$(mktemp)
trap 'rm -f "$script"' EXIT
cat > "$script" <<SQL
\set customer random($first, $last)
\set click random($click_first, $click_last)
INSERT INTO conversions_conversionevent (workspace_id, click_id, link_id, customer_id, event, value_cents, event_name,
    meta, occurred_at, channel, invoice_id, currency, is_test)
SELECT workspace_id, id, link_id, :customer, CASE WHEN :click % 3 = 0 THEN 'sale' ELSE 'lead' END,
    CASE WHEN :click % 3 = 0 THEN 4900 END, '', '{}', now(), 'api', '', 'USD', false
FROM clicks_click WHERE id = :click;
SQL
for phase in off on off on; do
  state=$([ "$phase" = on ] && echo ENABLE || echo DISABLE)
  psql "$URL" -qc "ALTER TABLE conversions_conversionevent $state TRIGGER conversions_customer_totals_add"
  tps=$(PGOPTIONS="-c synchronous_commit=off" pgbench -n -T "$SECONDS_EACH" -f "$script" "$URL" 2>/dev/null \
    | awk '/latency average/ {lat=$4} /^tps/ {tps=$3} END {print tps " tps, " lat " ms average"}')
  echo "totals trigger $phase: $tps"
done
psql "$URL" -qc "ALTER TABLE conversions_conversionevent ENABLE TRIGGER conversions_customer_totals_add"
psql "$URL" -Atqc "SELECT 'conversions: ' || count(*) || ', with a contact: ' || count(customer_id) FROM conversions_conversionevent"
for run in $(seq "${BENCH_RUNS:-2}"); do
  .venv/bin/python manage.py migrate conversions 0010 --noinput >/dev/null
  .venv/bin/python manage.py migrate conversions 0011 --noinput >/dev/null
  pgbench -n -c 1 -T 600 -P 1 -f "$script" "$URL" > "$script.writer" 2>&1 &
  writer=$!
  sleep 2
  start=$(date +%s%N)
  .venv/bin/python manage.py migrate conversions 0012 --noinput >/dev/null
  took=$(( ($(date +%s%N) - start) / 1000000 ))
  kill "$writer" 2>/dev/null; wait "$writer" 2>/dev/null || true
  worst=$(awk '/^progress/ {for (i = 1; i <= NF; i++) if ($i == "lat") print $(i + 1)}' "$script.writer" | sort -n | tail -1)
  echo "fill run $run: $took ms (manage.py migrate conversions 0012, start-up included); a writer meanwhile: worst second's average latency $worst ms"
  rm -f "$script.writer"
done
start=$(date +%s%N)
.venv/bin/python manage.py migrate conversions 0012 --noinput >/dev/null
echo "the same command with nothing to do: $(( ($(date +%s%N) - start) / 1000000 )) ms"
psql "$URL" -Atqc "SELECT 'totals rows: ' || count(*) FROM conversions_customertotals"
