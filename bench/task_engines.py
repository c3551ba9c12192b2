"""The two task engines the issue named, measured side by side: the cost of queueing a job inside a
transaction (what a request pays) and the jobs per second one worker runs (what a backlog drains at).

    pip install --target /tmp/djt --no-deps django-tasks django-tasks-db django-stubs-ext   # not a dependency
    PYTHONPATH=/tmp/djt BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/lftrack_bench_engines \
        .venv/bin/python bench/task_engines.py [N]

It creates (and drops) its own database. Both engines run a no-op job; procrastinate's worker with
concurrency 1, django-tasks' database worker in batch mode (it exits when the queue is empty).
"""

import os
import sys
import time

import django
import psycopg
from django.conf import settings

N = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
URL = os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/lftrack_bench_engines")
server, name = URL.rsplit("/", 1)
with psycopg.connect(f"{server}/postgres", autocommit=True) as admin:
    admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
    admin.execute(f'CREATE DATABASE "{name}"')

import environ  # noqa: E402

settings.configure(
    DATABASES={"default": environ.Env.db_url_config(URL)},
    INSTALLED_APPS=["django.contrib.contenttypes", "procrastinate.contrib.django", "django_tasks", "django_tasks_db"],
    TASKS={"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}},
    PROCRASTINATE_AUTODISCOVER_MODULE_NAME="",
    USE_TZ=True,
    LOGGING_CONFIG=None,
)
django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from django_tasks import task  # noqa: E402
from django_tasks_db.management.commands.db_worker import Worker  # noqa: E402
from django_tasks_db.models import DBTaskResult  # noqa: E402
from procrastinate.contrib.django import app  # noqa: E402

call_command("migrate", verbosity=0)


@app.task(name="noop")
def procrastinate_noop(n: int) -> None:
    pass


@task()
def tasks_noop(n: int) -> None:
    pass


def timed(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def enqueue_procrastinate() -> None:
    with transaction.atomic():  # the request's transaction: the jobs commit or roll back with it
        for n in range(N):
            procrastinate_noop.defer(n=n)


def enqueue_tasks() -> None:
    with transaction.atomic():
        for n in range(N):
            tasks_noop.enqueue(n)


def drain_procrastinate() -> None:
    with app.replace_connector(app.connector.get_worker_connector()) as worker_app:
        worker_app.run_worker(wait=False, concurrency=1, install_signal_handlers=False, listen_notify=False)


def drain_tasks() -> None:
    Worker(
        queue_names=["default"],
        interval=0.1,
        batch=True,
        backend_name="default",
        startup_delay=False,
        max_tasks=None,
        worker_id="bench",
        excluded_queue_names=[],
    ).run()


rows = []
for engine, enqueue, drain in (
    ("procrastinate", enqueue_procrastinate, drain_procrastinate),
    ("django-tasks (database backend)", enqueue_tasks, drain_tasks),
):
    queued = timed(enqueue)
    drained = timed(drain)
    rows.append((engine, queued / N * 1e6, N / drained))
with connection.cursor() as cursor:
    cursor.execute("SELECT status, count(*) FROM procrastinate_jobs GROUP BY status")
    print("procrastinate jobs:", cursor.fetchall(), "django-tasks results:", DBTaskResult.objects.count())
connection.close()
print(f"{N} no-op jobs each")
for engine, us, rate in rows:
    print(f"{engine}: {us:.0f} µs to queue one in a transaction, one worker runs {rate:.0f} jobs/s")
with psycopg.connect(f"{server}/postgres", autocommit=True) as admin:
    admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
