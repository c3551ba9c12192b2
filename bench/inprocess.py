"""Python CPU per conversion request, in-process: the whole WSGI stack without gunicorn or wrk.

Usage: DATABASE_URL=... REDIS_URL=... python bench/inprocess.py [REQUESTS] [--profile] [--redirect]
       BENCH_FLOOR=drf ... python bench/inprocess.py   # one of bench/floor.py's levels instead

--redirect sends GET /l/<key> instead (bench/redirect.lua's mix of links, user agents, referrers and
client addresses); with BENCH_FLOOR=django, to the floor's plain 302 view. --threads N sends them from N
threads at once, as a gunicorn worker's threads do, and also prints the kernel's share of the CPU, the
context switches per request and the clicks per statement (lftrack/batching.py's batches).

Seeds its own workspace, token and clicks (the database must be migrated), then sends REQUESTS
conversions (the same mix as bench/conversions.lua) straight to Django's WSGI handler on one thread
and prints this process's CPU time per request. PostgreSQL's and Redis's time is theirs, not
counted, so the figure is the Python cost a gunicorn worker pays per request before its own HTTP
handling. It still moves with the host's speed; to compare code, count instructions instead, which
are deterministic (per request: the difference between two counts, divided by their difference):

    BENCH_WARMUP_REQUESTS=20 valgrind --tool=callgrind .venv/bin/python bench/inprocess.py 300   # and 100

--through-django sends them to Django's handler (lftrack.wsgi.django_application), past clicks/wsgi.py's
path for the redirect's GET. --profile prints cProfile's top 40. As deployed behind nginx, with its access log on:

    TRUSTED_PROXY_COUNT=1 BENCH_FORWARDED_FOR=203.0.113.7 LOG_LEVEL=INFO python bench/inprocess.py 2>/dev/null
"""

import io
import json
import os
import resource
import secrets
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lftrack.settings")
os.environ.setdefault("SECRET_KEY", "bench-only-secret-key-not-for-production")
os.environ.setdefault("ALLOWED_HOSTS", "127.0.0.1")
os.environ.setdefault("LOG_LEVEL", "WARNING")
os.environ.setdefault("CONN_MAX_AGE", "600")
for name in ("RATELIMIT_CONVERSIONS_TOKEN", "RATELIMIT_CONVERSIONS_IP", "RATELIMIT_REDIRECT_IP"):
    os.environ.setdefault(name, "10000000/m")

from django.db import connection, transaction  # noqa: E402

from bench.floor import application as app  # noqa: E402  (BENCH_FLOOR picks the level; default: lftrack)
from bench.seed import webhook_endpoint  # noqa: E402  (BENCH_WEBHOOK=1: an endpoint wanting the events)
from clicks.links import link_add  # noqa: E402
from clicks.models import Click  # noqa: E402
from customers.models import Customer  # noqa: E402
from workspaces.services import workspace_create  # noqa: E402
from workspaces.tokens import api_token_create  # noqa: E402

if "--through-django" in sys.argv:  # the redirect through Django's handler, not clicks/wsgi.py's path before it
    from lftrack.wsgi import django_application as app


def seed(clicks: int = 2000, customers: int = 1000) -> tuple[str, list[str]]:
    with transaction.atomic():
        workspace = workspace_create(slug=f"inproc-{secrets.token_hex(4)}", name="In-process bench")
        token = api_token_create(workspace=workspace, name="bench").secret
        webhook_endpoint(workspace)
        link = link_add(workspace=workspace, destination="https://shop.example.com/pricing", post_title="Bench")
        rows = Click.objects.bulk_create([Click(workspace=workspace, link=link) for _ in range(clicks)])
        Customer.objects.bulk_create(
            [
                Customer(workspace=workspace, email=f"seeded-{i}@example.com", name=f"Seeded {i}", source="api")
                for i in range(customers)
            ]
        )
    return token, [row.click_id for row in rows]


def body(n: int, run: str, click_id: str) -> bytes:
    """The request bench/conversions.lua sends as its n-th."""
    if n % 2 == 0:
        tag = f"{run}-{n}"
        customer = {"email": f"new-{tag}@example.com", "external_id": f"ext-{tag}", "name": f"New {tag}"}
    else:
        customer = {"email": f"Seeded-{n % 1000}@Example.com", "name": "Someone else"}
    if n % 4 < 2:
        data = {
            "event": "sale",
            "click_id": click_id,
            "value_cents": 1000 + n,
            "event_name": "Annual plan",
            "customer": customer,
            "meta": {"order": str(n)},
        }
    else:
        data = {"event": "lead", "click_id": click_id, "event_name": "Signup", "customer": customer}
    return json.dumps(data).encode()


# bench/redirect.lua's user agents and referrers (its first five browsers, two previews; three referrers or none).
AGENTS = [
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36",
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Mobile Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15",
    "Mozilla/5.0 (X11; Linux x86_64; rv:127.0) Gecko/20100101 Firefox/127.0",
    "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)",
    "Twitterbot/1.0",
]
REFERRERS = ["https://t.co/abc", "https://www.facebook.com/", "https://news.ycombinator.com/item?id=1", ""]


def redirect_environ(n: int, keys: list[str]) -> dict:
    """The n-th GET /l/<key> of bench/redirect.lua's mix (deterministic: links, agents and addresses in turn)."""
    environ = {
        "REQUEST_METHOD": "GET",
        "PATH_INFO": f"/l/{keys[n % len(keys)]}",
        "QUERY_STRING": "",
        "SCRIPT_NAME": "",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "HTTP_HOST": "127.0.0.1:8000",
        "HTTP_USER_AGENT": AGENTS[n % len(AGENTS)],
        "HTTP_X_FORWARDED_FOR": f"198.51.100.{n % 250 + 1}",
        "wsgi.input": io.BytesIO(b""),
        "wsgi.url_scheme": "http",
        "wsgi.errors": sys.stderr,
    }
    if REFERRERS[n % len(REFERRERS)]:
        environ["HTTP_REFERER"] = REFERRERS[n % len(REFERRERS)]
    return environ


# BENCH_FORWARDED_FOR=203.0.113.7 (with TRUSTED_PROXY_COUNT=1) sends the header a front proxy adds.
FORWARDED_FOR = os.environ.get("BENCH_FORWARDED_FOR", "")


def main() -> None:
    count = int(next((a for a in sys.argv[1:] if a.isdigit()), 2000))
    token, clicks = seed()
    redirect = "--redirect" in sys.argv
    if redirect:
        workspace = workspace_create(slug=f"inproc-{secrets.token_hex(4)}", name="In-process redirects")
        keys = [
            link_add(
                workspace=workspace,
                destination=f"https://shop.example.com/p/{i}?utm_source=bench",
                post_title=f"Post {i % 20}",
            ).key
            for i in range(200)
        ]
    run = secrets.token_hex(4)
    statuses: dict[str, int] = {}

    def start_response(status, headers, exc_info=None):
        statuses[status] = statuses.get(status, 0) + 1

    def one(n: int) -> None:
        if redirect:
            response = app(redirect_environ(n, keys), start_response)
            b"".join(response)
            getattr(response, "close", lambda: None)()  # a WSGI server closes what has a close()
            return
        payload = body(n, run, clicks[n % len(clicks)])
        environ = {
            "REQUEST_METHOD": "POST",
            "PATH_INFO": "/api/v1/conversions",
            "QUERY_STRING": "",
            "SCRIPT_NAME": "",
            "SERVER_NAME": "127.0.0.1",
            "SERVER_PORT": "8000",
            "SERVER_PROTOCOL": "HTTP/1.1",
            "REMOTE_ADDR": "127.0.0.1",
            "HTTP_HOST": "127.0.0.1:8000",
            "CONTENT_TYPE": "application/json",
            "CONTENT_LENGTH": str(len(payload)),
            "HTTP_AUTHORIZATION": f"Bearer {token}",
            "wsgi.input": io.BytesIO(payload),
            "wsgi.url_scheme": "http",
            "wsgi.errors": sys.stderr,
        }
        if FORWARDED_FOR:  # as behind nginx (TRUSTED_PROXY_COUNT=1): the client's address, appended by it
            environ["HTTP_X_FORWARDED_FOR"] = FORWARDED_FOR
        response = app(environ, start_response)
        b"".join(response)
        response.close()

    for n in range(
        int(os.environ.get("BENCH_WARMUP_REQUESTS", 200))
    ):  # warm-up: imports, prepared statements, connections
        one(n)
    statuses.clear()
    if "--profile" in sys.argv:
        import cProfile
        import pstats

        profiler = cProfile.Profile()
        profiler.enable()
    threads = int(sys.argv[sys.argv.index("--threads") + 1]) if "--threads" in sys.argv else 1
    batches = _count_batches() if redirect and threads > 1 else []
    usage, cpu, wall = resource.getrusage(resource.RUSAGE_SELF), time.process_time(), time.perf_counter()
    if threads == 1:
        for n in range(200, 200 + count):
            one(n)
    else:
        count -= count % threads
        share = count // threads

        def sender(t: int) -> None:
            for n in range(200 + t * share, 200 + (t + 1) * share):
                one(n)
            connection.close()

        senders = [threading.Thread(target=sender, args=(t,)) for t in range(threads)]
        for thread in senders:
            thread.start()
        for thread in senders:
            thread.join()
    cpu, wall, after = time.process_time() - cpu, time.perf_counter() - wall, resource.getrusage(resource.RUSAGE_SELF)
    if "--profile" in sys.argv:
        profiler.disable()
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(40)
    print(f"inprocess: {count} requests, statuses {statuses}")
    print(f"inprocess: python cpu {cpu / count * 1000:.2f} ms per request, wall {wall / count * 1000:.2f} ms")
    if threads > 1:
        print(
            f"inprocess: {threads} threads: kernel {(after.ru_stime - usage.ru_stime) / count * 1000:.2f} ms of it,"
            f" {(after.ru_nvcsw - usage.ru_nvcsw) / count:.1f} voluntary context switches per request"
            + (f", {sum(batches) / len(batches):.1f} clicks a statement" if batches else "")
        )


def _count_batches() -> list[int]:
    """Sizes of the batches the redirect writes from now on (clicks/services.py)."""
    from clicks import services

    sizes: list[int] = []
    write = services._visits.write

    def counted(visits):
        sizes.append(len(visits))
        return write(visits)

    services._visits.write = counted
    return sizes


if __name__ == "__main__":
    main()
