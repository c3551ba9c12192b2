"""The redirect's statement with and without its `click.created` CTE, on PostgreSQL alone.

    BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/lftrack_bench_redirect_sql .venv/bin/python bench/redirect_statement.py [N] [K]

Creates (and drops) its own database, migrates, makes a link and, in another workspace, an endpoint
that wants clicks (so the endpoints table is not empty), then runs N clicks of each statement in
batches of K visits (default 1; clicks/services.py writes the clicks of concurrent requests together),
prepared, in autocommit as the redirect does, alternating in blocks of 500 clicks, and prints the time
per click and the backend's CPU per click (from /proc) for each.
"""

import os
import subprocess
import sys
import time
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
URL = os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/lftrack_bench_redirect_sql")
N = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
K = int(sys.argv[2]) if len(sys.argv) > 2 else 1
os.environ.update(
    DATABASE_URL=URL, SECRET_KEY="bench-only", DJANGO_SETTINGS_MODULE="lftrack.settings", LOG_LEVEL="WARNING"
)
server, name = URL.rsplit("/", 1)
with psycopg.connect(f"{server}/postgres", autocommit=True) as admin:
    admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
    admin.execute(f'CREATE DATABASE "{name}"')
subprocess.run([sys.executable, "manage.py", "migrate", "--noinput"], cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
sys.path.insert(0, str(ROOT))

import django  # noqa: E402

django.setup()
from clicks import services  # noqa: E402
from clicks.links import link_add  # noqa: E402
from webhooks.models import Endpoint  # noqa: E402
from webhooks.secrets import secret_new, secret_seal  # noqa: E402
from workspaces.services import workspace_create  # noqa: E402

key = link_add(workspace=workspace_create(slug="shop", name="Shop"), destination="https://shop.example.com/").key
Endpoint.objects.create(
    workspace=workspace_create(slug="other", name="Other"),
    url="https://hooks.example.com/",
    event_types=["click.created"],
    secret=secret_seal(secret_new()),
)
# The statement as it was before the webhook CTE: the same text up to it, without the event's insert.
new_sql = services._follow_sql(K)
old_sql = (
    new_sql[: new_sql.index(",\nevent AS")].replace("\n    RETURNING id, workspace_id", "")
    + "\nSELECT n, destination FROM found\n"
)
visit = [key, None, "Mozilla/5.0", "", False, "desktop", "Firefox", "Linux", "", True]

with psycopg.connect(URL, autocommit=True, cursor_factory=psycopg.RawCursor) as conn:  # $1 placeholders
    pid = conn.info.backend_pid

    def cpu() -> float:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    totals = {"before": [0.0, 0.0], "after": [0.0, 0.0]}
    for block in range(N // 500):
        for label, sql in (
            (("before", old_sql), ("after", new_sql)) if block % 2 else (("after", new_sql), ("before", old_sql))
        ):
            c0, t0 = cpu(), time.perf_counter()
            for i in range(0, 500, K):
                params = []
                for j in range(K):
                    visit[1] = f"{label}-{block}-{i + j}"
                    params += visit
                conn.execute(sql, params, prepare=True).fetchall()
            totals[label][0] += time.perf_counter() - t0
            totals[label][1] += cpu() - c0
    count = (N // 500) * len(range(0, 500, K)) * K
    for label, (wall, backend) in totals.items():
        print(
            f"{label}, {K} a statement: {wall / count * 1e6:.0f} µs a click, PostgreSQL CPU {backend / count * 1e6:.0f} µs a click"
        )
django.db.connections.close_all()
with psycopg.connect(f"{server}/postgres", autocommit=True) as admin:
    admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
