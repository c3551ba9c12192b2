"""Structured logs: one JSON line per API request, with a request id and never a token; one JSON line format
for every process (gunicorn, the application, the task worker, the sender)."""

import json
import logging
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import requests
from django.utils import timezone

from lftrack.logs import JsonFormatter
from tests.conftest import database_url
from tests.factories import CampaignEmailFactory, CampaignFactory, ClickFactory, EnrollmentFactory

BASE_DIR = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.django_db


def access_lines(caplog) -> list[dict]:
    formatter = JsonFormatter()
    return [json.loads(formatter.format(r)) for r in caplog.records if r.name == "lftrack.access"]


def test_one_json_line_per_api_request_without_the_token(api, acme_token, caplog):
    click = ClickFactory(link__post__workspace=acme_token.workspace)
    with caplog.at_level(logging.INFO, logger="lftrack.access"):
        resp = api.post(
            "/api/v1/conversions",
            {"event": "lead", "click_id": click.click_id},
            token=acme_token,
            HTTP_X_REQUEST_ID="req-123",
        )
    assert resp.status_code == 201 and resp["X-Request-ID"] == "req-123"
    [line] = access_lines(caplog)
    assert line["method"] == "POST" and line["path"] == "/api/v1/conversions"
    assert line["status"] == 201 and line["duration_ms"] >= 0
    assert line["workspace_id"] == acme_token.workspace_id
    assert line["request_id"] == "req-123"
    assert acme_token.secret not in caplog.text
    assert acme_token.secret[3:11] not in json.dumps(line)


def test_rejected_request_is_logged_with_its_status_and_no_workspace(api, caplog):
    with caplog.at_level(logging.INFO, logger="lftrack.access"):
        resp = api.post("/api/v1/conversions", {}, token="lf_" + "x" * 43)
    [line] = access_lines(caplog)
    assert line["status"] == 401 and line["workspace_id"] is None
    assert line["request_id"] == resp["X-Request-ID"]
    assert "lf_xxxx" not in caplog.text


@pytest.mark.parametrize("bad", ["has space", "x" * 200, "a\nb", "<script>"])
def test_untrustworthy_request_ids_are_replaced(api, bad):
    resp = api.get("/api/v1/conversions", HTTP_X_REQUEST_ID=bad)
    assert resp["X-Request-ID"] != bad and len(resp["X-Request-ID"]) == 32


def test_pages_outside_the_api_get_a_request_id_but_no_access_line(client, caplog):
    with caplog.at_level(logging.INFO, logger="lftrack.access"):
        resp = client.get("/healthz")
    assert resp["X-Request-ID"]
    assert access_lines(caplog) == []


def test_formatter_writes_exceptions_inside_the_json():
    try:
        raise ValueError("boom")
    except ValueError:
        record = logging.getLogger("t").makeRecord(
            "t", logging.ERROR, "f", 1, "failed %s", ("x",), __import__("sys").exc_info()
        )
    line = json.loads(JsonFormatter().format(record))
    assert line["message"] == "failed x" and "ValueError: boom" in line["exc"]


def json_lines(stream: str) -> list[dict]:
    """Every line a process wrote, each a JSON object of the one format (`ts`, `level`, `logger`, `message`)."""
    lines = [json.loads(line) for line in stream.splitlines()]  # fails on a line of plain text
    assert lines and all({"ts", "level", "logger", "message"} <= line.keys() for line in lines), stream
    return lines


@pytest.mark.django_db(transaction=True)
def test_gunicorn_and_the_application_write_one_json_line_format(acme):
    from tests.faults.conftest import running_gunicorn

    with running_gunicorn(
        database=database_url(), LOG_LEVEL="INFO", GUNICORN_LOG_LEVEL="info", GUNICORN_ACCESS_LOG="1"
    ) as (base, process):
        requests.get(f"{base}/l/nosuchkey?email=ada@example.com", timeout=10)
        requests.post(f"{base}/api/v1/conversions", json={}, headers={"Authorization": "Bearer lf_wrong"}, timeout=10)
    lines = json_lines(process.stderr.read())
    messages = {(line["logger"], line["message"]) for line in lines}
    assert {("gunicorn.error", "Starting gunicorn 27.0.1"), ("gunicorn.error", "Shutting down: Master")} <= messages
    access = [line for line in lines if line["logger"] == "gunicorn.access"]
    assert {(a["method"], a["path"], a["status"]) for a in access} >= {
        ("GET", "/l/nosuchkey", 404),
        ("POST", "/api/v1/conversions", 401),
    }
    [api] = [line for line in lines if line["logger"] == "lftrack.access"]
    assert (api["status"], api["request_id"]) == (401, next(a["request_id"] for a in access if a["status"] == 401))
    assert "ada@example.com" not in "\n".join(map(json.dumps, lines))


@pytest.mark.django_db(transaction=True)
def test_the_worker_writes_a_json_line_per_job_run_and_failure():
    from conversions.tasks import idempotency_purge
    from lftrack.tasks import clear_sessions

    idempotency_purge.defer(timestamp=0)
    clear_sessions.defer(no_such_argument=1)  # fails: the task takes a timestamp
    worker = subprocess.run(
        [sys.executable, "manage.py", "procrastinate", "worker", "--one-shot", "--queues", "default"],
        cwd=BASE_DIR,
        env={**os.environ, "DATABASE_URL": database_url(), "LOG_LEVEL": "INFO"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert worker.returncode == 0, worker.stderr
    jobs = {line["task"]: line for line in json_lines(worker.stderr) if "task" in line}  # and the periodic ones
    assert {"conversions.idempotency_purge", "lftrack.clear_sessions"} <= jobs.keys()
    ran, failed = jobs["conversions.idempotency_purge"], jobs["lftrack.clear_sessions"]
    assert (ran["level"], ran["action"], ran["result"], ran["attempts"]) == ("INFO", "job_success", 0, 0)
    assert ran["duration_ms"] >= 0 and "job" not in ran and "worker" not in ran
    assert (failed["level"], failed["action"]) == ("ERROR", "job_error")
    assert "TypeError" in failed["exc"] and "no_such_argument" in failed["exc"]


@pytest.mark.django_db(transaction=True)
def test_the_sender_writes_json_lines_and_a_failed_pass_says_so(acme):
    campaign = CampaignFactory(workspace=acme)
    CampaignEmailFactory(campaign=campaign, position=1, delay_minutes=0)
    EnrollmentFactory(campaign=campaign, next_send_at=timezone.now())
    with socket.socket() as closed:  # a port where no SMTP server listens
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    sender = subprocess.run(
        [sys.executable, "manage.py", "send_due_emails", "--once"],
        cwd=BASE_DIR,
        capture_output=True,
        text=True,
        timeout=60,
        env={
            **os.environ,
            "DATABASE_URL": database_url(),
            "LOG_LEVEL": "DEBUG",
            "EMAIL_URL": f"smtp://127.0.0.1:{port}",
            "EMAIL_TIMEOUT": "2",
            "PUBLIC_BASE_URL": "https://track.example.com",
        },
    )
    assert sender.returncode == 0, sender.stderr
    lines = json_lines(sender.stderr)
    assert [(line["level"], line["message"]) for line in lines] == [
        ("ERROR", "email backend unavailable"),
        ("INFO", "send pass"),
    ]
    assert json.loads(sender.stdout) == {"sent": 0, "deferred": 1, "skipped": 0}  # put back, still due


def test_gunicorn_builds_an_access_line_only_while_its_access_log_is_on(monkeypatch):
    """gunicorn.conf.py's logger: with the access logger at WARNING (GUNICORN_ACCESS_LOG off) no line is built."""
    from gunicorn.config import Config

    from lftrack.gunicorn_worker import Logger

    logger = Logger(Config())
    logger._access_log_enabled = True  # as gunicorn decides under gunicorn.conf.py's logging configuration
    built = []
    monkeypatch.setattr(logger, "atoms", lambda *args: built.append(args) or {})
    logger.access_log.setLevel(logging.WARNING)
    logger.access(None, None, {}, None)
    assert built == []
    logger.access_log.setLevel(logging.INFO)
    logger.access(None, None, {}, None)
    assert len(built) == 1
