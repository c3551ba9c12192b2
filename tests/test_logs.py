"""Structured logs: one JSON line per API request, with a request id and never a token."""
import json
import logging

import pytest

from lftrack.logs import JsonFormatter
from tests.factories import ClickFactory

pytestmark = pytest.mark.django_db


def access_lines(caplog) -> list[dict]:
    formatter = JsonFormatter()
    return [json.loads(formatter.format(r)) for r in caplog.records if r.name == "lftrack.access"]


def test_one_json_line_per_api_request_without_the_token(api, acme_token, caplog):
    click = ClickFactory(link__post__workspace=acme_token.workspace)
    with caplog.at_level(logging.INFO, logger="lftrack.access"):
        resp = api.post(
            "/api/v1/conversions", {"event": "lead", "click_id": click.click_id}, token=acme_token,
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
        record = logging.getLogger("t").makeRecord("t", logging.ERROR, "f", 1, "failed %s", ("x",), __import__("sys").exc_info())
    line = json.loads(JsonFormatter().format(record))
    assert line["message"] == "failed x" and "ValueError: boom" in line["exc"]
