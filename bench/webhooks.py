"""Events delivered per second by one worker (`manage.py procrastinate worker`) into a local receiver.

    BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/lftrack_bench_webhooks .venv/bin/python bench/webhooks.py [EVENTS] [CONCURRENCY ...]

Creates (and drops) its own database, starts an HTTP receiver on 127.0.0.1 that verifies every signature
with standardwebhooks (as a real receiver would; it shares the 2 cores), records EVENTS new customers
with an endpoint wanting `customer.created` (each event queued with its dispatch job, nothing sent),
then for each CONCURRENCY starts one worker, which dispatches the events (their deliveries and the
jobs that send them) and delivers them, and times it from its registration with the engine (its
start-up left out) to the last delivery. Prints events/s and the worker's CPU per event.
"""

import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
URL = os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/lftrack_bench_webhooks")
EVENTS = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
CONCURRENCIES = [int(c) for c in sys.argv[2:]] or [1, 8]
os.environ.update(
    DATABASE_URL=URL,
    SECRET_KEY="bench-only-secret-key-not-for-production",
    DJANGO_SETTINGS_MODULE="lftrack.settings",
    WEBHOOKS_ALLOW_PRIVATE_NETWORKS="1",
    DEBUG="1",
    LOG_LEVEL="WARNING",
    CONN_MAX_AGE="600",
)
server, name = URL.rsplit("/", 1)
with psycopg.connect(f"{server}/postgres", autocommit=True) as admin:
    admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
    admin.execute(f'CREATE DATABASE "{name}"')
subprocess.run([sys.executable, "manage.py", "migrate", "--noinput"], cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
sys.path.insert(0, str(ROOT))

import django  # noqa: E402

django.setup()
from django.db import connection  # noqa: E402
from standardwebhooks import Webhook  # noqa: E402

from customers.services import customer_match  # noqa: E402
from webhooks.models import Delivery, Endpoint, Event  # noqa: E402
from webhooks.services import endpoint_create  # noqa: E402
from workspaces.services import workspace_create  # noqa: E402

verified = 0
lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        global verified
        body = self.rfile.read(int(self.headers["Content-Length"]))
        Webhook(SECRET).verify(body, {k.lower(): v for k, v in self.headers.items()})
        with lock:
            verified += 1
        self.send_response(204)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


receiver = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
threading.Thread(target=receiver.serve_forever, daemon=True).start()


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


for concurrency in CONCURRENCIES:
    workspace = workspace_create(slug=f"bench-{concurrency}", name="Bench")
    issued = endpoint_create(
        workspace=workspace, url=f"http://127.0.0.1:{receiver.server_address[1]}/hook", event_types=["customer.created"]
    )
    SECRET = issued.secret
    for n in range(EVENTS):
        customer_match(workspace=workspace, channel="api", email=f"p{n}@example.com")
    Endpoint.objects.exclude(pk=issued.endpoint.pk).update(enabled=False)
    # Each event is dispatched by the worker (its deliveries built there): the clock covers both jobs.
    queued = Event.objects.filter(workspace=workspace, type="customer.created").count()
    verified = 0
    with connection.cursor() as cursor:
        cursor.execute("SELECT coalesce(max(id), 0) FROM procrastinate_workers")
        workers_before = cursor.fetchone()[0]
    worker = subprocess.Popen(
        [
            sys.executable,
            "manage.py",
            "procrastinate",
            "worker",
            "--queues",
            "webhooks",
            "--concurrency",
            str(concurrency),
        ],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    # The clock starts when the worker has registered with the engine (its start-up left out), just before it
    # takes its first job, and stops at the last delivery; when the last event was dispatched is printed too.
    undispatched = Event.objects.filter(workspace=workspace, dispatched_at__isnull=True)
    while True:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1 FROM procrastinate_workers WHERE id > %s", [workers_before])
            if cursor.fetchone():
                break
        time.sleep(0.005)
    started, cpu0 = time.perf_counter(), cpu_seconds(worker.pid)
    dispatched = None
    while Delivery.objects.filter(endpoint=issued.endpoint, state="delivered").count() < queued:
        if dispatched is None and not undispatched.exists():
            dispatched = time.perf_counter() - started
        time.sleep(0.05)
    elapsed, cpu = time.perf_counter() - started, cpu_seconds(worker.pid) - cpu0
    worker.terminate()
    worker.wait()
    print(
        f"concurrency {concurrency}: {queued} events in {elapsed:.1f} s: {queued / elapsed:.0f} events/s, "
        f"worker CPU {cpu / queued * 1000:.2f} ms per event, {verified} signatures verified, "
        f"the last event dispatched after {dispatched or elapsed:.1f} s"
    )
connection.close()
with psycopg.connect(f"{server}/postgres", autocommit=True) as admin:
    admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
