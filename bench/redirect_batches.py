"""What a click costs by the size of the batch it is stored in: the redirect's statement for K visits at a time.

Usage: DATABASE_URL=... REDIS_URL=... python bench/redirect_batches.py [K ...]   (default 1 2 4 8 16 32)

Calls clicks/services.py's batch writer (the click limit counted on Redis, then the one statement) with
K visits at a time, on one connection, and prints per click the CPU of this process (Python) and of its
PostgreSQL backend (from /proc), and the time a batch takes. Instructions, for code comparisons:

    BENCH_BATCHES=50 valgrind --tool=callgrind .venv/bin/python bench/redirect_batches.py 8   # and 150: (b - a) / 100
"""

import os
import secrets
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lftrack.settings")
os.environ.setdefault("SECRET_KEY", "bench-only-secret-key-not-for-production")
os.environ.setdefault("RATELIMIT_REDIRECT_IP", "10000000/m")

import django

django.setup()

from django.db import connection  # noqa: E402

from clicks import services  # noqa: E402
from clicks.links import link_add  # noqa: E402
from workspaces.services import workspace_create  # noqa: E402

AGENT = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36"
)


def main() -> None:
    sizes = [int(arg) for arg in sys.argv[1:]] or [1, 2, 4, 8, 16, 32]
    workspace = workspace_create(slug=f"batches-{secrets.token_hex(4)}", name="Batches")
    keys = [link_add(workspace=workspace, destination=f"https://shop.example.com/p/{i}").key for i in range(200)]

    def visit(n: int) -> services._Visit:
        return services._Visit(
            keys[n % 200],
            services.new_click_id(),
            AGENT,
            "https://t.co/abc",
            False,
            "desktop",
            "Chrome",
            "Windows",
            "t.co",
            "GB",
            "",
            f"198.51.100.{n % 250}",
        )

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        backend = cursor.fetchone()[0]

    def backend_cpu() -> float:
        fields = Path(f"/proc/{backend}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    for size in sizes:
        for i in range(20):  # warm: the statement for this size is prepared
            services._visits_record([visit(i * size + j) for j in range(size)])
        batches = int(os.environ.get("BENCH_BATCHES", max(200, 3000 // size)))
        pg, cpu, wall = backend_cpu(), time.process_time(), time.perf_counter()
        for i in range(batches):
            services._visits_record([visit(i * size + j) for j in range(size)])
        pg, cpu, wall = backend_cpu() - pg, time.process_time() - cpu, time.perf_counter() - wall
        clicks = batches * size
        print(
            f"redirect_batches: {size:2d} a statement: python {cpu / clicks * 1e6:4.0f} µs a click, postgres"
            f" {pg / clicks * 1e6:4.0f} µs a click, {wall / batches * 1000:.2f} ms a statement"
        )


if __name__ == "__main__":
    main()
