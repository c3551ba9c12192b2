"""/metrics under gunicorn with two workers (gunicorn.conf.py's multiprocess directory and child_exit): a scrape
answered by either worker counts the requests of both, and of a worker that has died since."""

import os
import re
import signal
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests

from clicks.models import Click
from tests.conftest import database_url
from tests.factories import LinkFactory
from tests.faults.conftest import running_gunicorn
from tests.scrape import TOKEN, moved, samples

pytestmark = [pytest.mark.fault, pytest.mark.django_db(transaction=True)]


def workers(master: int) -> list[int]:
    return [int(pid) for pid in Path(f"/proc/{master}/task/{master}/children").read_text().split()]


def counted_pids(directory: Path) -> set[int]:
    """The processes that have counted a click (prometheus-client's `counter_<pid>.db`: a scrape counts only in a
    histogram, so each of these took clicks)."""
    return {int(path.stem.rsplit("_", 1)[1]) for path in directory.glob("counter_*.db")}


def scrape(base: str) -> dict:
    response = requests.get(f"{base}/metrics", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10)
    assert response.status_code == 200, response.text
    return samples(response.text)


def clicks(base: str, key: str, count: int) -> None:
    """`count` clicks from 8 threads, each on a connection of its own, so both workers take some."""

    def one(_: int) -> int:
        with requests.Session() as session:
            return session.get(f"{base}/l/{key}", allow_redirects=False, timeout=10).status_code

    with ThreadPoolExecutor(8) as pool:
        assert set(pool.map(one, range(count))) == {302}


def test_a_scrape_counts_every_worker_even_one_that_died(tmp_path):
    link = LinkFactory()
    directory = tmp_path / "metrics"
    directory.mkdir()
    env = {"WEB_CONCURRENCY": "2", "METRICS_TOKEN": TOKEN, "PROMETHEUS_MULTIPROC_DIR": str(directory)}
    env["RATELIMIT_REDIRECT_IP"] = "1000000/m"  # every click from 127.0.0.1 recorded
    with running_gunicorn(database=database_url(), **env) as (base, process):
        deadline = time.monotonic() + 20
        while len(workers(process.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        first = scrape(base)
        sent = 0
        while len(counted_pids(directory) & set(workers(process.pid))) < 2 and time.monotonic() < deadline:
            clicks(base, link.key, 40)
            sent += 40
        assert len(counted_pids(directory) & set(workers(process.pid))) == 2  # both workers took clicks
        # One of them goes (a SIGTERM, as gunicorn's max_requests recycling does); its counts must stay.
        gone = sorted(counted_pids(directory) & set(workers(process.pid)))[0]
        os.kill(gone, signal.SIGTERM)
        while gone in workers(process.pid) or len(workers(process.pid)) < 2:
            assert time.monotonic() < deadline + 20
            time.sleep(0.1)
        clicks(base, link.key, 40)
        sent += 40
        after = scrape(base)
    assert Click.objects.filter(link=link).count() == sent
    assert moved(first, after, "lftrack_clicks_total", outcome="recorded") == sent
    assert moved(first, after, "lftrack_request_duration_seconds_count", route="follow-link", status="302") == sent
    assert moved(first, after, "lftrack_batch_size_sum") == sent


def test_the_scrape_docs_metrics_shows_answers_the_text_format(tmp_path):
    """docs/metrics.md, "The endpoint": its curl line, against gunicorn started with the token it makes."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "metrics.md").read_text()
    curl = re.search(r"^    (curl .*/metrics)$", page, re.M)[1]
    env = {"WEB_CONCURRENCY": "2", "METRICS_TOKEN": TOKEN, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    with running_gunicorn(database=database_url(), **env) as (base, _):
        command = curl.replace("curl ", "curl -sf ").replace("http://10.0.0.5:8000", base)
        result = subprocess.run(
            ["bash", "-c", command],
            env={**os.environ, "METRICS_TOKEN": TOKEN},
            capture_output=True,
            text=True,
            timeout=30,
        )
    assert result.returncode == 0, result.stderr
    assert "# TYPE lftrack_rollup_lag_seconds gauge" in result.stdout
    assert 'lftrack_request_duration_seconds_count{route="healthz",status="200"}' in result.stdout


def test_without_the_token_a_worker_refuses_the_scrape(tmp_path):
    env = {"WEB_CONCURRENCY": "2", "METRICS_TOKEN": TOKEN, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    with running_gunicorn(database=database_url(), **env) as (base, _):
        assert requests.get(f"{base}/metrics", timeout=10).status_code == 401
        wrong = requests.get(f"{base}/metrics", headers={"Authorization": "Bearer nope"}, timeout=10)
        assert wrong.status_code == 401 and "lftrack_" not in wrong.text
    with running_gunicorn(database=database_url(), WEB_CONCURRENCY="2") as (base, _):  # no token set: no endpoint
        assert (
            requests.get(f"{base}/metrics", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10).status_code == 404
        )
