"""Sequence-sending throughput: emails per second that `send_due_emails --once` hands to a local SMTP server.

Seeds COUNT due enrollments (OTHERS not yet due, so the due index has company, and a suppression
list of SUPPRESSED addresses) in a scratch
PostgreSQL database, starts an aiosmtpd sink on 127.0.0.1 in this process, then runs one worker and
then two workers at once over the same due set, and prints emails per second for each. Every run
checks that each due step went out exactly once (EmailSend rows and messages the sink received).

    .venv/bin/python bench/sender.py                      # 5,000 due, batch 100
    .venv/bin/python bench/sender.py --count 20000 --batch-size 200 --keep
    .venv/bin/python bench/sender.py --idle-workspaces 1000   # and 1,000 other workspaces with sends due tomorrow

The claim takes a fair share of each workspace with something due, found by one index probe per workspace with
sends scheduled (docs/concurrency.md, "Fair shares"): --idle-workspaces measures what those probes cost.

Needs a PostgreSQL server it may create and drop a database on (--server, default the local one).
The database is dropped at the end unless --keep.
"""

import argparse
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import psycopg
from aiosmtpd.controller import Controller

ROOT = Path(__file__).resolve().parent.parent


class CountingSink:
    """Accepts everything and counts messages per recipient (to prove nothing went twice)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.per_recipient: dict[str, int] = {}

    async def handle_DATA(self, server, session, envelope):
        with self.lock:
            for rcpt in envelope.rcpt_tos:
                self.per_recipient[rcpt] = self.per_recipient.get(rcpt, 0) + 1
        return "250 OK"

    def reset(self) -> None:
        with self.lock:
            self.per_recipient.clear()

    def total(self) -> int:
        with self.lock:
            return sum(self.per_recipient.values())

    def duplicates(self) -> int:
        with self.lock:
            return sum(1 for count in self.per_recipient.values() if count > 1)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def scratch_sending(*, server: str, db: str, keep: bool, **extra: str) -> Iterator[tuple[str, dict, CountingSink]]:
    """(database URL, environment, sink): the scratch database `db` on `server`, dropped, created and migrated; a
    CountingSink on a free loopback port; the environment of a sender process mailing to it, plus `extra`. The
    sink stops and the database is dropped at the end unless `keep`."""
    admin = psycopg.connect(f"{server}/postgres", autocommit=True)
    admin.execute(f'DROP DATABASE IF EXISTS "{db}"')
    admin.execute(f'CREATE DATABASE "{db}"')
    database_url = f"{server}/{db}"
    sink = CountingSink()
    controller = Controller(sink, hostname="127.0.0.1", port=free_port())
    controller.start()
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "EMAIL_URL": f"smtp://127.0.0.1:{controller.port}",
        "SECRET_KEY": "bench-only-secret-key",
        "PUBLIC_BASE_URL": "https://track.example.com",
        "DEFAULT_FROM_EMAIL": "Bench <news@bench.example>",
        "CONN_MAX_AGE": "60",
        **extra,
    }
    env.pop("REDIS_URL", None)
    try:
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "--noinput"], cwd=ROOT, env=env, check=True, capture_output=True
        )
        yield database_url, env, sink
    finally:
        controller.stop()
        if not keep:
            admin.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
        admin.close()


SEED = """
INSERT INTO workspaces_workspace (name, slug, tracking_key, allowed_origins, daily_send_limit, created_at)
VALUES ('Bench', 'bench', 'pk_bench_sender', '', %(limit)s, now()) RETURNING id
"""


def seed(conn: psycopg.Connection, *, count: int, others: int, suppressed: int) -> None:
    with conn.cursor() as cur:
        workspace = cur.execute(SEED, {"limit": 10 * (count + others)}).fetchone()[0]
        campaign = cur.execute(
            "INSERT INTO campaigns_campaign (workspace_id, slug, name, status, created_at)"
            " VALUES (%s, 'bench', 'Bench', 'active', now()) RETURNING id",
            [workspace],
        ).fetchone()[0]
        cur.execute(
            "INSERT INTO campaigns_campaignemail (workspace_id, campaign_id, position, subject, body, delay_minutes, active, created_at)"
            " VALUES (%(w)s, %(c)s, 1, 'Welcome, {{ name }}', %(body)s, 0, true, now()),"
            "        (%(w)s, %(c)s, 2, 'Tips for {{ name }}', 'More soon.', 1440, true, now())",
            {
                "w": workspace,
                "c": campaign,
                "body": "Hi {{ name }},\n\nthanks for signing up with {{ email }}.\n" + "A line of text.\n" * 20,
            },
        )
        # A suppression list of realistic size, so the per-row check runs against a real index.
        cur.execute(
            "INSERT INTO campaigns_suppression (workspace_id, email, reason, created_at)"
            " SELECT %(w)s, 'gone' || g || '@bench.example', 'unsubscribed', now() FROM generate_series(1, %(s)s) g",
            {"w": workspace, "s": suppressed},
        )
        # `due` people are due within the last hour; `later` people are enrolled but due tomorrow.
        cur.execute(
            "INSERT INTO customers_customer (workspace_id, email, name, avatar_url, external_id, source, created_at, updated_at)"
            " SELECT %(w)s, 'due' || g || '@bench.example', 'Due Person ' || g, '', '', 'api', now(), now() FROM generate_series(1, %(n)s) g"
            " UNION ALL"
            " SELECT %(w)s, 'later' || g || '@bench.example', 'Later Person ' || g, '', '', 'api', now(), now() FROM generate_series(1, %(o)s) g",
            {"w": workspace, "n": count, "o": others},
        )
        cur.execute(
            "INSERT INTO campaigns_enrollment (workspace_id, campaign_id, customer_id, state, enrolled_at, last_sent_position,"
            " next_send_at, held_name) SELECT %(w)s, %(c)s, id, 'active', t, 0, t, '' FROM ("
            "   SELECT id, CASE WHEN email LIKE 'due%%' THEN now() - random() * interval '1 hour'"
            "                   ELSE now() + interval '1 day' + random() * interval '1 hour' END AS t"
            "   FROM customers_customer WHERE workspace_id = %(w)s) s",
            {"w": workspace, "c": campaign},
        )
    conn.commit()


def seed_idle(conn: psycopg.Connection, *, workspaces: int) -> None:
    """`workspaces` more workspaces, each with a campaign and one contact whose send is due tomorrow."""
    with conn.cursor() as cur:
        cur.execute(
            "WITH w AS (INSERT INTO workspaces_workspace (name, slug, tracking_key, allowed_origins, created_at)"
            "   SELECT 'Idle ' || g, 'idle-' || g, 'pk_idle_' || g, '', now() FROM generate_series(1, %(n)s) g RETURNING id),"
            " c AS (INSERT INTO campaigns_campaign (workspace_id, slug, name, status, created_at)"
            "   SELECT id, 'idle', 'Idle', 'active', now() FROM w RETURNING id, workspace_id),"
            " p AS (INSERT INTO customers_customer (workspace_id, email, name, avatar_url, external_id, source, created_at, updated_at)"
            "   SELECT workspace_id, 'idle@bench.example', '', '', '', 'api', now(), now() FROM c RETURNING id, workspace_id)"
            " INSERT INTO campaigns_enrollment (workspace_id, campaign_id, customer_id, state, enrolled_at, last_sent_position,"
            " next_send_at, held_name) SELECT c.workspace_id, c.id, p.id, 'active', now(), 0, now() + interval '1 day', ''"
            " FROM c JOIN p USING (workspace_id)",
            {"n": workspaces},
        )
    conn.commit()


def reset(conn: psycopg.Connection) -> None:
    """Make the due set due again, as if nothing had been sent."""
    with conn.cursor() as cur:
        cur.execute("DELETE FROM campaigns_emailsend")
        cur.execute(
            "UPDATE campaigns_enrollment e SET state = 'active', last_sent_position = 0, last_sent_at = NULL,"
            " completed_at = NULL, next_send_at = e.enrolled_at"
            " FROM customers_customer c WHERE c.id = e.customer_id AND c.email LIKE 'due%%'"
        )
    conn.commit()
    conn.autocommit = True
    conn.execute("VACUUM ANALYZE")
    conn.autocommit = False


def run_workers(n: int, *, env: dict, batch_size: int) -> dict:
    """Start n `send_due_emails --once` at the same moment; rate over the span of their passes."""
    command = [sys.executable, "manage.py", "send_due_emails", "--once", "--batch-size", str(batch_size)]
    started = time.time()
    workers = [
        subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(n)
    ]
    passes = []
    for worker in workers:
        out, err = worker.communicate(timeout=1800)
        if worker.returncode != 0:
            raise SystemExit(f"worker failed ({worker.returncode}):\n{err[-3000:]}")
        line = next(json.loads(x) for x in err.splitlines() if x.startswith("{") and '"send pass"' in x)
        end = datetime.strptime(line["ts"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC).timestamp()
        passes.append({"printed": json.loads(out), "start": end - line["duration_ms"] / 1000, "end": end, **line})
    wall = time.time() - started
    span = max(p["end"] for p in passes) - min(p["start"] for p in passes)
    sent = sum(p["sent"] for p in passes)
    return {
        "workers": n,
        "sent": sent,
        "per_worker": [p["sent"] for p in passes],
        "pass_seconds": round(span, 2),
        "emails_per_second": round(sent / span, 1),
        "wall_seconds_with_startup": round(wall, 2),
    }


def explain(env: dict, batch_size: int) -> str:
    code = (
        "import django; django.setup()\n"
        "from django.db import connection, transaction\nfrom django.utils import timezone\n"
        "from campaigns.sending import claim_sql\n"
        "with transaction.atomic(), connection.cursor() as cursor:\n"
        f"    sql, params = claim_sql(now=timezone.now(), batch_size={batch_size})\n"
        "    cursor.execute('EXPLAIN ANALYZE ' + sql, params)\n"
        "    print('\\n'.join(row[0] for row in cursor.fetchall()))\n"
        "    transaction.set_rollback(True)\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**env, "DJANGO_SETTINGS_MODULE": "lftrack.settings"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=5000, help="due enrollments (one email each)")
    parser.add_argument("--others", type=int, default=50000, help="enrollments not yet due")
    parser.add_argument("--suppressed", type=int, default=10000, help="addresses on the suppression list")
    parser.add_argument("--batch-size", type=int, default=100)
    parser.add_argument(
        "--idle-workspaces", type=int, default=0, help="other workspaces, each with a send due tomorrow"
    )
    parser.add_argument(
        "--server", default="postgres://postgres@127.0.0.1:5432", help="PostgreSQL server URL, no database"
    )
    parser.add_argument("--db", default="h_send_bench", help="scratch database (dropped and created)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch database")
    args = parser.parse_args()

    sending = scratch_sending(server=args.server, db=args.db, keep=args.keep, LOG_LEVEL="INFO", LOG_FORMAT="json")
    with sending as (database_url, env, sink):
        with psycopg.connect(database_url) as conn:
            seed(conn, count=args.count, others=args.others, suppressed=args.suppressed)
            seed_idle(conn, workspaces=args.idle_workspaces)
            reset(conn)
            plan = explain(env, args.batch_size)
            results = []
            for workers in (1, 2):
                reset(conn)
                sink.reset()
                load_before = os.getloadavg()
                result = run_workers(workers, env=env, batch_size=args.batch_size)
                rows = conn.execute(
                    "SELECT count(*), count(DISTINCT enrollment_id) FROM campaigns_emailsend WHERE status = 'sent'"
                ).fetchone()
                conn.commit()
                assert rows == (args.count, args.count), rows
                assert sink.total() == args.count and sink.duplicates() == 0, (sink.total(), sink.duplicates())
                result["load_average_before"] = [round(x, 2) for x in load_before]
                results.append(result)
        print("claim query plan (EXPLAIN ANALYZE):")
        print(plan)
        for result in results:
            print(json.dumps(result))
        print(
            f"\n{args.count} due emails, batch {args.batch_size}, {args.others} enrollments not due, "
            f"{args.suppressed} suppressed addresses, {args.idle_workspaces} other workspaces with sends scheduled; "
            f"cores {os.cpu_count()}, load average now {', '.join(f'{x:.2f}' for x in os.getloadavg())}"
        )
        for result in results:
            print(
                f"  {result['workers']} worker(s): {result['emails_per_second']} emails/s "
                f"({result['sent']} in {result['pass_seconds']} s; per worker {result['per_worker']})"
            )


if __name__ == "__main__":
    main()
