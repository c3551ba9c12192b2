"""A maximal contact import beside live conversions: how long its transactions hold contacts' rows, and how long a
conversion for one of its contacts waits meanwhile.

Usage: DATABASE_URL=... REDIS_URL=... .venv/bin/python bench/contact_import.py [--batch-rows N] [--runs N] [--alone]

Seeds a workspace with 1,000 contacts without a name and a click (the database must be migrated). The file names
the 1,000 contacts with a name and an external id, so every row locks its contact's row and the id's advisory
lock. The import's dry run, then the import, run as the back office runs them (ContactResource.import_data)
while a thread sends POST /api/v1/conversions for the file's contacts through Django's WSGI stack, one after
another, each with the name and external id the file gives (so each needs the rows the import holds). Prints,
per run, its time, its longest transaction, and the conversions sent meanwhile: how many, how many 503, the
slowest. --batch-rows 1000 is the reference: the whole file in one transaction, as the library ran it.

The conversions share this process's interpreter lock with the import and slow it down (a gunicorn worker
running an import has no such neighbour): --alone sends none, for the import's own time.
"""

import argparse
import contextlib
import json
import os
import secrets
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lftrack.settings")
os.environ.setdefault("SECRET_KEY", "bench-only-secret-key-not-for-production")
os.environ.setdefault("ALLOWED_HOSTS", "127.0.0.1")
os.environ.setdefault("LOG_LEVEL", "ERROR")
os.environ.setdefault("RATELIMIT_CONVERSIONS_TOKEN", "10000000/m")
os.environ.setdefault("RATELIMIT_CONVERSIONS_IP", "10000000/m")

import django

django.setup()

from django.db import connection, transaction  # noqa: E402
from django.test import Client  # noqa: E402

from backoffice import imports  # noqa: E402
from backoffice.contact_csv import contacts_read  # noqa: E402
from clicks.links import link_add  # noqa: E402
from clicks.models import Click  # noqa: E402
from customers.models import Customer  # noqa: E402
from workspaces.services import workspace_create  # noqa: E402
from workspaces.tokens import api_token_create  # noqa: E402

ROWS = 1000


class TimedTransactions:
    """backoffice.imports' `transaction`, with each atomic block's duration kept."""

    def __init__(self) -> None:
        self.durations: list[float] = []
        self.set_rollback = transaction.set_rollback

    @contextlib.contextmanager
    def atomic(self):
        started = time.monotonic()
        with transaction.atomic():
            yield
        self.durations.append(time.monotonic() - started)


def seed() -> tuple[object, str, str, list[str]]:
    workspace = workspace_create(slug=f"import-{secrets.token_hex(4)}", name="Import bench")
    token = api_token_create(workspace=workspace, name="bench").secret
    link = link_add(workspace=workspace, destination="https://shop.example.com/", post_title="Bench")
    click = Click.objects.create(workspace=workspace, link=link)
    emails = [f"c{n}-{secrets.token_hex(3)}@example.com" for n in range(ROWS)]
    Customer.objects.bulk_create([Customer(workspace=workspace, email=e, source="api") for e in emails])
    return workspace, token, click.click_id, emails


def convert(stop: threading.Event, token: str, click_id: str, emails: list[str], answers: list) -> None:
    client = Client(HTTP_HOST="127.0.0.1")
    n = 0
    while not stop.is_set():
        email = emails[n % len(emails)]
        body = {
            "event": "lead",
            "click_id": click_id,
            "customer": {"email": email, "name": f"Person {email}", "external_id": f"crm-{email}"},
        }
        started = time.monotonic()
        answer = client.post(
            "/api/v1/conversions",
            json.dumps(body),
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {token}",
        )
        answers.append((answer.status_code, time.monotonic() - started))
        n += 1
    connection.close()


def run(workspace, token: str, click_id: str, emails: list[str], dry_run: bool, alone: bool) -> dict:
    text = "email,name,external_id\n" + "".join(f"{e},Person {e},crm-{e}\n" for e in emails)
    timed, answers, stop = TimedTransactions(), [], threading.Event()
    imports.transaction = timed
    sender = threading.Thread(target=convert, args=(stop, token, click_id, emails, answers))
    if not alone:
        sender.start()
        time.sleep(0.2)
    started = time.monotonic()
    try:
        imports.ContactResource(workspace=workspace).import_data(contacts_read(text.encode()), dry_run=dry_run)
    finally:
        took = time.monotonic() - started
        stop.set()
        if not alone:
            sender.join()
        imports.transaction = transaction
    return {
        "step": "preview" if dry_run else "import",
        "seconds": round(took, 2),
        "transactions": len(timed.durations),
        "longest_transaction_s": round(max(timed.durations), 3),
        "conversions": len(answers),
        "503": sum(status == 503 for status, _ in answers),
        "slowest_conversion_s": round(max((seconds for _, seconds in answers), default=0), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-rows", type=int, default=imports.BATCH_ROWS)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--alone", action="store_true", help="no conversions beside the import")
    args = parser.parse_args()
    imports.BATCH_ROWS = args.batch_rows
    for _ in range(args.runs):
        workspace, token, click_id, emails = seed()
        for dry_run in (True, False):
            print(
                json.dumps(
                    {"batch_rows": args.batch_rows, **run(workspace, token, click_id, emails, dry_run, args.alone)}
                )
            )


if __name__ == "__main__":
    main()
