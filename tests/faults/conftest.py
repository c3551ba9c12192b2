"""A real gunicorn (the production config) on a free loopback port, serving the test database."""
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
from django.db import connection

BASE_DIR = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def database_url() -> str:
    """The test database, for a process of its own."""
    db = connection.settings_dict
    password = f":{db['PASSWORD']}" if db["PASSWORD"] else ""
    socket_dir = db.get("OPTIONS", {}).get("host")  # the embedded server listens on a Unix socket only
    if socket_dir and not db["HOST"]:
        return f"postgres://{db['USER']}{password}@/{db['NAME']}?host={socket_dir}"
    return f"postgres://{db['USER']}{password}@{db['HOST']}:{db['PORT'] or 5432}/{db['NAME']}"


def wait_until_up(url: str, process: subprocess.Popen, seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"exited with {process.returncode}: {process.stderr.read() if process.stderr else ''}")
        try:
            requests.get(url, timeout=1)
            return
        except requests.ConnectionError:
            time.sleep(0.1)
    raise RuntimeError(f"{url} did not come up")


@pytest.fixture
def gunicorn(transactional_db):
    """The base URL of gunicorn started with gunicorn.conf.py (1 worker x 4 threads), stopped afterwards."""
    port = free_port()
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "GUNICORN_BIND": f"127.0.0.1:{port}",
        "ALLOWED_HOSTS": "127.0.0.1",
        "WEB_CONCURRENCY": "1",
        "LOG_LEVEL": "WARNING",
        "GUNICORN_LOG_LEVEL": "warning",
        "RATELIMIT_CONVERSIONS_TOKEN": "100000/m",
        "RATELIMIT_CONVERSIONS_IP": "100000/m",
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "-c", "gunicorn.conf.py", "lftrack.wsgi"],
        cwd=BASE_DIR, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(base + "/healthz", process)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
