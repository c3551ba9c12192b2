"""The slow-client attack, with and without the shipped nginx front (deploy/nginx.conf): loopback, bounded."""
import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest
import requests

from tests.faults.conftest import BASE_DIR, free_port, wait_until_up

pytestmark = pytest.mark.fault

SLOW_CLIENTS = 16  # each holds a connection open, sending a header line every 2 s and never finishing
PROBES = 8


def front_config(template: str, *, listen: int, upstream: int, temp: Path) -> str:
    """deploy/nginx.conf as shipped, on test ports, inside a minimal main configuration."""
    site = template.replace("listen 80;", f"listen 127.0.0.1:{listen};").replace(
        "server 127.0.0.1:8000;", f"server 127.0.0.1:{upstream};"
    )
    assert f"127.0.0.1:{listen}" in site and f"127.0.0.1:{upstream}" in site
    (temp / "lftrack.conf").write_text(site)
    paths = " ".join(f"{kind}_temp_path {temp / kind};" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    return (
        f"daemon off; worker_processes 1; pid {temp / 'nginx.pid'}; error_log {temp / 'error.log'} warn;\n"
        "events { worker_connections 512; }\n"
        f"http {{ access_log off; {paths} include {temp / 'lftrack.conf'}; }}\n"
    )


@pytest.fixture
def front(gunicorn, tmp_path):
    if not shutil.which("nginx"):
        pytest.skip("needs Debian's nginx (make test and .ci/run install it)")
    tmp_path.chmod(0o777)  # nginx's workers run as an unprivileged user when started as root
    port = free_port()
    upstream = int(gunicorn.rsplit(":", 1)[1])
    config = tmp_path / "nginx.conf"
    config.write_text(front_config((BASE_DIR / "deploy" / "nginx.conf").read_text(), listen=port, upstream=upstream, temp=tmp_path))
    process = subprocess.Popen(["nginx", "-c", str(config), "-p", str(tmp_path)], stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(base + "/healthz", process)
        yield base
    finally:
        process.terminate()
        process.wait(timeout=10)


def slow_clients(base: str, count: int, stop: threading.Event) -> list[threading.Thread]:
    host, port = base.removeprefix("http://").split(":")

    def trickle() -> None:
        try:
            with socket.create_connection((host, int(port)), timeout=5) as sock:
                sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
                while not stop.wait(2):
                    sock.sendall(b"X-Slow: 1\r\n")
        except OSError:
            pass  # the server gave up on us: that is the defence working

    threads = [threading.Thread(target=trickle, daemon=True) for _ in range(count)]
    for thread in threads:
        thread.start()
    time.sleep(1)  # let them all connect and start their headers
    return threads


def probe(base: str) -> list[float | None]:
    """Seconds each /healthz took, None for one that did not answer within 2 s."""
    times = []
    for _ in range(PROBES):
        started = time.monotonic()
        try:
            ok = requests.get(base + "/healthz", timeout=2).status_code == 200
            times.append(time.monotonic() - started if ok else None)
        except requests.RequestException:
            times.append(None)
    return times


def under_attack(base: str) -> list[float | None]:
    stop = threading.Event()
    threads = slow_clients(base, SLOW_CLIENTS, stop)
    try:
        return probe(base)
    finally:
        stop.set()
        for thread in threads:
            thread.join(5)


def test_slow_clients_do_not_block_healthz_through_the_front(front):
    times = under_attack(front)
    print("healthz through the front, under attack:", times)
    assert None not in times, times
    assert max(times) < 0.5, times


def test_without_the_front_slow_clients_block_gunicorn(gunicorn):
    """Why the proxy is required: gunicorn's threads wait on the slow clients' headers."""
    times = under_attack(gunicorn)
    print("healthz straight to gunicorn, under attack:", times)
    assert times.count(None) >= PROBES // 2, times
