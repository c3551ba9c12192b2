"""A real gunicorn (the production config: gunicorn.conf.py, its gevent worker) on a free loopback port, serving
the test database; `gthread_gunicorn` is the API pool's shape (GUNICORN_WORKER_CLASS=gthread). A real SMTP server
(`sink`) and sender processes killed mid-way on it, for the senders' fault tests."""

import asyncio
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from email import message_from_bytes
from pathlib import Path

import pytest
import requests
from aiosmtpd.controller import Controller
from django.db import connection

from tests.conftest import database_url
from tests.faults.proxy import FaultProxy

BASE_DIR = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until_up(url: str, process: subprocess.Popen, seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"exited with {process.returncode}: {process.stderr.read() if process.stderr else ''}")
        try:
            requests.get(url, timeout=1)
            return
        except (requests.ConnectionError, requests.Timeout):  # a loaded machine may take a second to answer
            time.sleep(0.1)
    raise RuntimeError(f"{url} did not come up")


def database_upstream() -> tuple[str, int] | str:
    """Where the test database listens: (host, port), or the embedded server's Unix socket."""
    db = connection.settings_dict
    socket_dir = db.get("OPTIONS", {}).get("host")
    if socket_dir and not db["HOST"]:
        return f"{socket_dir}/.s.PGSQL.{db['PORT'] or 5432}"
    return db["HOST"], int(db["PORT"] or 5432)


@contextmanager
def running_gunicorn(*, database: str, **env):
    """gunicorn started with gunicorn.conf.py (1 gevent worker unless `env` says otherwise) on a free port;
    yields (base URL, process)."""
    port = free_port()
    env = {
        **os.environ,
        "DATABASE_URL": database,
        "GUNICORN_BIND": f"127.0.0.1:{port}",
        "ALLOWED_HOSTS": "127.0.0.1",
        "WEB_CONCURRENCY": "1",
        "LOG_LEVEL": "WARNING",
        "GUNICORN_LOG_LEVEL": "warning",
        "RATELIMIT_CONVERSIONS_TOKEN": "100000/m",
        "RATELIMIT_CONVERSIONS_IP": "100000/m",
        **env,
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "-c", "gunicorn.conf.py", "lftrack.wsgi"],
        cwd=BASE_DIR,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(base + "/healthz", process)
        yield base, process
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture
def gunicorn(transactional_db):
    """The base URL of a gunicorn serving the test database."""
    with running_gunicorn(database=database_url()) as (base, _):
        yield base


@pytest.fixture
def gthread_gunicorn(transactional_db):
    """The base URL of a gunicorn of the API pool's shape (1 worker x 4 threads) serving the test database."""
    with running_gunicorn(database=database_url(), GUNICORN_WORKER_CLASS="gthread") as (base, _):
        yield base


@pytest.fixture
def proxied_gunicorn(transactional_db):
    """(base URL, FaultProxy, process) of a gunicorn reaching the test database through a FaultProxy, with
    short deadlines so that a test waits seconds, not the production defaults."""
    proxy = FaultProxy(database_upstream())
    db = connection.settings_dict
    url = f"postgres://{db['USER']}@127.0.0.1:{proxy.port}/{db['NAME']}"
    try:
        with running_gunicorn(
            database=url,
            REQUEST_DEADLINE="2",
            REDIRECT_DEADLINE="1",
            READY_TIMEOUT="1",
            DB_CONNECT_TIMEOUT="2",
            CONN_MAX_AGE="60",
        ) as (base, process):
            yield base, proxy, process
    finally:
        proxy.close()


class SlowSink:
    """Accepts every message after a short think, and keeps the Message-ID of each."""

    def __init__(self):
        self.message_ids: list[str] = []

    async def handle_DATA(self, server, session, envelope):
        await asyncio.sleep(0.02)
        self.message_ids.append(message_from_bytes(envelope.content)["Message-ID"])
        return "250 Message accepted for delivery"


@pytest.fixture
def sink(caplog):
    """(SlowSink, port): an SMTP server on a free loopback port."""
    caplog.set_level(logging.WARNING, logger="mail.log")
    handler = SlowSink()
    controller = Controller(handler, hostname="127.0.0.1", port=free_port())
    controller.start()
    yield handler, controller.port
    controller.stop()


def senders_killed_mid_way(handler: SlowSink, port: int, *, workers: int, received: int = 20) -> None:
    """`workers` send_due_emails processes mailing to the sink on `port`, killed with SIGKILL once it has
    `received` messages (or after 30 s)."""
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "EMAIL_URL": f"smtp://127.0.0.1:{port}",
        "PUBLIC_BASE_URL": "https://track.example.com",
        "LOG_LEVEL": "WARNING",
    }
    processes = [
        subprocess.Popen(
            [sys.executable, "manage.py", "send_due_emails", "--batch-size", "50"],
            cwd=BASE_DIR,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(workers)
    ]
    deadline = time.monotonic() + 30
    while len(handler.message_ids) < received and time.monotonic() < deadline:
        time.sleep(0.02)
    for process in processes:
        process.send_signal(signal.SIGKILL)
        process.wait()


def mail_here_to(settings, port: int) -> None:
    """This process's sender mails to the sink on `port`, once the killed senders' sessions have ended on the
    database server (their reservations are released only then)."""
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_HOST_USER, settings.EMAIL_HOST_PASSWORD = (
        "127.0.0.1",
        port,
        "",
        "",
    )
    settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
    time.sleep(0.5)
