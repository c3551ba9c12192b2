"""Broadcast-sending throughput: emails per second that `send_due_emails --once` hands to a local SMTP sink for a broadcast.

Seeds COUNT tagged contacts (and OTHERS untagged ones) in a scratch PostgreSQL database, a segment of the tag
and a broadcast to it with a tracked link, starts an aiosmtpd sink on 127.0.0.1 in this process, times the
broadcast's start (its recipients fixed: one row each), then runs WORKERS sender processes at once until the
broadcast is sent, and prints emails per second. Checks that each recipient got exactly one message.

    .venv/bin/python bench/broadcast.py                       # 100,000 recipients, one worker, batch 100
    .venv/bin/python bench/broadcast.py --count 20000 --workers 2 --keep
    .venv/bin/python bench/broadcast.py --start-only          # the start alone: 100,000 recipients fixed

Needs a PostgreSQL server it may create and drop a database on (--server, default the local one).
The database is dropped at the end unless --keep.
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sender import scratch_sending

ROOT = Path(__file__).resolve().parent.parent

SEED = """
WITH w AS (
    INSERT INTO workspaces_workspace (name, slug, tracking_key, allowed_origins, daily_send_limit, created_at)
    VALUES ('Bench', 'bench', 'pk_bench_broadcast', '', %(limit)s, now()) RETURNING id
), people AS (
    INSERT INTO customers_customer (workspace_id, email, name, avatar_url, external_id, source, created_at, updated_at)
    SELECT w.id, 'p' || g || '@bench.example', 'Person ' || g, '', '', 'api', now(), now()
    FROM w, generate_series(1, %(count)s + %(others)s) g RETURNING id, workspace_id, email
)
INSERT INTO customers_contacttag (workspace_id, customer_id, name, created_at)
SELECT workspace_id, id, 'all', now() FROM people
WHERE substring(email from 2 for position('@' in email) - 2)::int <= %(count)s
"""

# The broadcast, made through the services (its Markdown rendered and sanitized as the back office would).
BROADCAST = """
import django; django.setup()
import json, time
from django.utils import timezone
from campaigns.broadcasts import broadcast_save, broadcast_schedule, broadcast_start
from campaigns.segments import segment_save
from workspaces.models import Workspace
workspace = Workspace.objects.get(slug="bench")
segment = segment_save(workspace=workspace, name="All", filters={"tags": ["all"]})
markdown = "# News for {{ name }}\\n\\nOur [spring collection](https://shop.example/spring) is out.\\n\\n" + "A line.\\n" * 20
broadcast = broadcast_schedule(broadcast=broadcast_save(
    workspace=workspace, segment=segment, name="Spring", subject="Spring, {{ name }}", markdown=markdown))
started = time.perf_counter()
total = broadcast_start(broadcast=broadcast, now=timezone.now())
print(json.dumps({"recipients": total, "start_seconds": round(time.perf_counter() - started, 2)}))
"""


def run_workers(n: int, *, env: dict, batch_size: int) -> float:
    """n `send_due_emails --once` at the same moment, again until nothing is left; wall seconds."""
    command = [sys.executable, "manage.py", "send_due_emails", "--once", "--batch-size", str(batch_size)]
    started = time.perf_counter()
    workers = [
        subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(n)
    ]
    for worker in workers:
        _, err = worker.communicate(timeout=3600)
        if worker.returncode != 0:
            raise SystemExit(f"worker failed ({worker.returncode}):\n{err[-3000:]}")
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=100_000, help="recipients (tagged contacts)")
    parser.add_argument("--others", type=int, default=10_000, help="contacts outside the segment")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=100)
    parser.add_argument(
        "--server", default="postgres://postgres@127.0.0.1:5432", help="PostgreSQL server URL, no database"
    )
    parser.add_argument("--db", default="lftrack_broadcast_bench", help="scratch database (dropped and created)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch database")
    parser.add_argument("--start-only", action="store_true", help="time the start (recipients fixed), send nothing")
    args = parser.parse_args()

    sending = scratch_sending(
        server=args.server, db=args.db, keep=args.keep, LOG_LEVEL="WARNING", DJANGO_SETTINGS_MODULE="lftrack.settings"
    )
    with sending as (database_url, env, sink):
        with psycopg.connect(database_url) as conn:
            conn.execute(SEED, {"limit": 10 * args.count, "count": args.count, "others": args.others})
            conn.commit()
            conn.autocommit = True
            conn.execute("VACUUM ANALYZE")
        made = subprocess.run(
            [sys.executable, "-c", BROADCAST], cwd=ROOT, env=env, check=True, capture_output=True, text=True
        )
        start = json.loads(made.stdout.strip().splitlines()[-1])
        if args.start_only:
            print(
                json.dumps({**start, "load_average": [round(x, 2) for x in os.getloadavg()], "cores": os.cpu_count()})
            )
            return
        load_before = os.getloadavg()
        seconds = run_workers(args.workers, env=env, batch_size=args.batch_size)
        with psycopg.connect(database_url) as conn:
            rows = conn.execute(
                "SELECT count(*) FILTER (WHERE status = 'sent'), count(*), (SELECT status FROM campaigns_broadcast)"
                " FROM campaigns_broadcastrecipient"
            ).fetchone()
        assert rows == (args.count, args.count, "sent"), rows
        assert sink.total() == args.count and sink.duplicates() == 0, (sink.total(), sink.duplicates())
        result = {
            "recipients": args.count,
            "workers": args.workers,
            "batch_size": args.batch_size,
            "start_seconds": start["start_seconds"],
            "send_seconds": round(seconds, 1),
            "emails_per_second": round(args.count / seconds, 1),
            "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in os.getloadavg()],
            "cores": os.cpu_count(),
        }
        print(json.dumps(result))


if __name__ == "__main__":
    main()
