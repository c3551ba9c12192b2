"""Payment connector throughput: Stripe events per second into a running gunicorn, beside POST /api/v1/conversions.

Creates a scratch database (dropped at the end unless --keep), migrates, seeds a workspace with clicks, a Stripe
connection and an API token, starts gunicorn (2 workers x 4 threads) on 127.0.0.1, and drives it from CONCURRENCY
client threads with kept connections, in one sitting:

1. reference: POST /api/v1/conversions, a sale of a new buyer with an invoice id per request (the integrator's own
   call, which the connector replaces);
2. checkout: checkout.session.completed in payment mode, each a new sale of a new buyer on its own click;
3. renewal: invoice.paid of subscriptions whose checkouts were sent before, attributed by the remembered customer;
4. duplicate: the renewals' events delivered again (one indexed insert that conflicts, nothing recorded).

Each event is signed beforehand by the stripe package's own helper (its five-minute tolerance covers the run).
Prints requests per second, p50 and p99 latency, the non-2xx count and gunicorn's CPU per request of each phase, and checks the database
holds exactly one sale per event sent.

    .venv/bin/python bench/payments.py                  # 2,000 requests a phase
    .venv/bin/python bench/payments.py --requests 5000 --concurrency 16

Needs PostgreSQL and Redis (as in .ci/run); figures and their command: docs/benchmarks.md, "Payment connectors".
"""

import argparse
import http.client
import json
import os
import secrets
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psycopg
import stripe

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
SECRET = "whsec_bench_" + secrets.token_hex(16)


def sh(*args: str, env: dict) -> str:
    return subprocess.run(args, cwd=ROOT, env=env, check=True, capture_output=True, text=True).stdout


SEED = """
import json, sys
import django
django.setup()
from clicks.models import Click
from clicks.links import link_add
from payments.connections import connection_create
from workspaces.services import api_token_create, workspace_create
workspace = workspace_create(slug="bench-payments", name="Bench")
link = link_add(workspace=workspace, destination="https://shop.example.com/pricing", post_title="Bench")
clicks = Click.objects.bulk_create([Click(workspace=workspace, link=link) for _ in range(int(sys.argv[1]))])
connection = connection_create(workspace=workspace, provider="stripe", signing_secret=sys.argv[2]).connection
print(json.dumps({"token": api_token_create(workspace=workspace, name="bench").secret,
                  "url_token": connection.url_token, "clicks": [c.click_id for c in clicks]}))
"""


def event(event_type: str, obj: dict) -> bytes:
    body = {
        "id": f"evt_{secrets.token_hex(12)}",
        "object": "event",
        "api_version": "2026-10-28.endive",
        "created": int(time.time()),
        "data": {"object": obj},
        "livemode": True,
        "type": event_type,
    }
    return json.dumps(body).encode()


def signed(body: bytes) -> tuple[bytes, dict]:
    header = stripe.WebhookSignature.generate_signature_header(body.decode(), SECRET)
    return body, {"Stripe-Signature": header, "Content-Type": "application/json"}


def checkout(click_id: str, customer: str, mode: str = "payment", subscription: str | None = None) -> dict:
    return {
        "id": f"cs_{secrets.token_hex(12)}",
        "object": "checkout.session",
        "mode": mode,
        "payment_status": "paid",
        "amount_total": 4900,
        "currency": "usd",
        "client_reference_id": click_id,
        "customer": customer,
        "subscription": subscription,
        "payment_intent": f"pi_{secrets.token_hex(12)}",
        "customer_details": {"email": f"{customer}@example.com", "name": "Bench Buyer"},
        "metadata": {},
    }


def renewal(customer: str, subscription: str) -> dict:
    return {
        "id": f"in_{secrets.token_hex(12)}",
        "object": "invoice",
        "amount_paid": 4900,
        "currency": "usd",
        "customer": customer,
        "customer_email": f"{customer}@example.com",
        "billing_reason": "subscription_cycle",
        "parent": {
            "type": "subscription_details",
            "subscription_details": {"subscription": subscription, "metadata": {}},
        },
    }


class Client:
    """One kept connection per thread, as a provider's sender (or wrk) keeps them."""

    def __init__(self, port: int):
        self.port, self.local = port, threading.local()

    def post(self, path: str, body: bytes, headers: dict) -> tuple[int, float]:
        conn = getattr(self.local, "conn", None) or http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        self.local.conn = conn
        started = time.perf_counter()
        try:
            conn.request("POST", path, body, headers)
            response = conn.getresponse()
            response.read()
        except OSError:
            conn.close()
            self.local.conn = None
            raise
        return response.status, time.perf_counter() - started


def cpu_seconds(master: int) -> float:
    """User + system CPU seconds of gunicorn's workers so far (/proc: the children of its master)."""
    ticks = os.sysconf("SC_CLK_TCK")
    children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
    total = 0
    for pid in children:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / ticks


def phase(name: str, client: Client, requests: list[tuple[str, bytes, dict]], concurrency: int, master: int) -> dict:
    cpu = cpu_seconds(master)
    started = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        results = list(pool.map(lambda r: client.post(*r), requests))
    took = time.perf_counter() - started
    latencies = sorted(seconds for _, seconds in results)
    out = {
        "phase": name,
        "requests": len(results),
        "per_second": round(len(results) / took),
        "p50_ms": round(statistics.median(latencies) * 1000, 1),
        "p99_ms": round(latencies[int(len(latencies) * 0.99) - 1] * 1000, 1),
        "non_2xx": sum(1 for status, _ in results if not 200 <= status < 300),
        "gunicorn_cpu_ms_per_request": round((cpu_seconds(master) - cpu) / len(results) * 1000, 2),
    }
    print(json.dumps(out), flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000, help="requests per phase")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--server", default=os.environ.get("BENCH_PG_URL", "postgres://postgres@127.0.0.1:5432"))
    parser.add_argument("--database", default="lftrack_bench_payments")
    parser.add_argument("--redis", default=os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/15"))
    parser.add_argument("--port", type=int, default=8766)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    n = args.requests
    with psycopg.connect(f"{args.server}/postgres", autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {args.database}")
        admin.execute(f"CREATE DATABASE {args.database}")
    env = {
        **os.environ,
        "DATABASE_URL": f"{args.server}/{args.database}",
        "REDIS_URL": args.redis,
        "DJANGO_SETTINGS_MODULE": "lftrack.settings",
        "SECRET_KEY": "bench-only-secret-key-not-for-production",
        "DEBUG": "0",
        "ALLOWED_HOSTS": "127.0.0.1",
        "LOG_LEVEL": "WARNING",
        "CONN_MAX_AGE": "600",
        # Raised for the run, not switched off: every request still counts on Redis.
        "RATELIMIT_CONVERSIONS_TOKEN": "10000000/m",
        "RATELIMIT_CONVERSIONS_IP": "10000000/m",
        "RATELIMIT_PAYMENT_HOOKS": "10000000/m",
    }
    gunicorn = None
    try:
        sh(PY, "manage.py", "migrate", "--noinput", env=env)
        seed = json.loads(sh(PY, "-c", SEED, str(3 * n + 50), SECRET, env=env))
        gunicorn = subprocess.Popen(
            [
                PY,
                "-m",
                "gunicorn",
                "lftrack.wsgi",
                "--bind",
                f"127.0.0.1:{args.port}",
                "--workers",
                "2",
                "--threads",
                "4",
                "--worker-class",
                "gthread",
                "--log-level",
                "warning",
            ],
            cwd=ROOT,
            env=env,
        )
        client = Client(args.port)
        for _ in range(100):
            try:
                client.post("/healthz", b"", {})
                break
            except OSError:
                time.sleep(0.2)
        clicks = iter(seed["clicks"])
        hook = f"/hooks/payments/{seed['url_token']}"
        api_headers = {"Authorization": f"Bearer {seed['token']}", "Content-Type": "application/json"}
        subscriptions = [(f"cus_{secrets.token_hex(8)}", f"sub_{secrets.token_hex(8)}") for _ in range(50)]
        for customer, subscription in subscriptions:  # remembered before the run: renewals need nothing more
            client.post(
                hook,
                *signed(
                    event("checkout.session.completed", checkout(next(clicks), customer, "subscription", subscription))
                ),
            )
        warm = [(hook, *signed(event("customer.created", {"id": f"cus_{i}"}))) for i in range(200)]
        phase("warm-up", client, warm, args.concurrency, gunicorn.pid)
        # The same work as a connector sale's: a sale with a new buyer, matched by email.
        reference = [
            (
                "/api/v1/conversions",
                json.dumps(
                    {
                        "event": "sale",
                        "click_id": next(clicks),
                        "value_cents": 4900,
                        "currency": "USD",
                        "invoice_id": f"pi_{secrets.token_hex(12)}",
                        "customer": {"email": f"ref-{i}@example.com", "name": "Bench Buyer"},
                    }
                ).encode(),
                api_headers,
            )
            for i in range(n)
        ]
        sales = [
            (hook, *signed(event("checkout.session.completed", checkout(next(clicks), f"cus_{i}")))) for i in range(n)
        ]
        renewals = [
            (hook, *signed(event("invoice.paid", renewal(*subscriptions[i % len(subscriptions)])))) for i in range(n)
        ]
        results = [
            phase("reference: POST /api/v1/conversions", client, reference, args.concurrency, gunicorn.pid),
            phase("checkout.session.completed", client, sales, args.concurrency, gunicorn.pid),
            phase("invoice.paid renewal", client, renewals, args.concurrency, gunicorn.pid),
            phase("duplicate delivery", client, renewals, args.concurrency, gunicorn.pid),
        ]
        with psycopg.connect(f"{args.server}/{args.database}") as db:
            (stored,) = db.execute("SELECT count(*) FROM conversions_conversionevent WHERE event = 'sale'").fetchone()
        expected = 3 * n  # reference, checkouts, renewals; the duplicates add none
        print(json.dumps({"sales_stored": stored, "expected": expected, "ok": stored == expected}))
        if stored != expected or any(r["non_2xx"] for r in results):
            sys.exit("bench: a request failed or a sale was recorded twice")
    finally:
        if gunicorn is not None:
            gunicorn.terminate()
            gunicorn.wait(timeout=30)
        if not args.keep:
            with psycopg.connect(f"{args.server}/postgres", autocommit=True) as admin:
                admin.execute(f"DROP DATABASE IF EXISTS {args.database} WITH (FORCE)")


if __name__ == "__main__":
    main()
