"""No email address in any log line: query strings and request bodies never reach the logs."""

import io
import logging

import pytest
from django.test import Client

from lftrack.logs import JobLines, JsonFormatter, NoQueryStrings
from tests.factories import CustomerFactory

SEEDED = "seeded.person+logs@example.com"


@pytest.fixture
def log_output(settings):
    """Everything logged during the test, through a handler made as settings.LOGGING makes the console one."""
    assert settings.LOGGING["handlers"]["console"]["filters"] == ["no_query_strings", "job_lines"]
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(NoQueryStrings())
    handler.addFilter(JobLines())
    root = logging.getLogger()
    root.handlers.insert(0, handler)  # first: the configured handler would clean the record for us
    yield stream
    root.removeHandler(handler)


@pytest.mark.django_db
def test_a_failing_admin_search_and_api_call_log_no_email(as_root_client, acme_token, monkeypatch, log_output):
    CustomerFactory(workspace=acme_token.workspace, email=SEEDED)

    def explode(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr("backoffice.customers.CustomerAdmin.get_search_results", explode)
    with pytest.raises(RuntimeError):  # the test client re-raises; the server logs it first
        as_root_client.get("/admin/customers/customer/", {"q": SEEDED})
    api = Client(raise_request_exception=False)
    monkeypatch.setattr("conversions.api.conversion_record", explode)
    resp = api.post(
        f"/api/v1/conversions?email={SEEDED}",
        {"event": "lead", "click_id": "x", "customer": {"email": SEEDED}},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {acme_token.secret}",
    )
    assert resp.status_code == 500
    logged = log_output.getvalue()
    assert "Internal Server Error: /admin/customers/customer/" in logged  # the errors were logged...
    assert "unhandled error on POST /api/v1/conversions" in logged
    assert SEEDED not in logged and "seeded.person" not in logged  # ...without the address


def test_runserver_request_lines_lose_their_query_string():
    record = logging.LogRecord(
        "django.server",
        logging.INFO,
        __file__,
        1,
        '"%s" %s %s',
        (f"GET /admin/?q={SEEDED} HTTP/1.1", "200", "512"),
        None,
    )
    assert NoQueryStrings().filter(record)
    assert record.getMessage() == '"GET /admin/ HTTP/1.1" 200 512'


@pytest.fixture
def as_root_client(db):
    from tests.factories import UserFactory

    client = Client(raise_request_exception=True)
    client.force_login(UserFactory(is_staff=True, is_superuser=True))
    return client
