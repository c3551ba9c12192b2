"""Contact imports and exports run in the member's own request, not in a shared queue: one workspace's import in
the middle of its transaction leaves another workspace's import and export on time (docs/concurrency.md,
"Fair shares")."""

import csv
import io
import threading

import pytest
from django.db import connection

from backoffice import imports
from customers.models import Customer
from tests.backoffice.test_exports import CONTACTS
from tests.backoffice.test_imports import PROCESS, confirm_data, upload

pytestmark = pytest.mark.django_db(transaction=True)
BOUND = 15.0  # seconds: far more than an import of three rows takes, far less than "never"


def in_thread(work) -> tuple[threading.Thread, list]:
    outcome: list = []

    def run():
        try:
            outcome.append(work())
        except BaseException as exc:  # reported by the assertions
            outcome.append(exc)
        finally:
            connection.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


def test_a_workspaces_import_holding_its_transaction_leaves_another_workspaces_import_and_export_alone(
    as_bob,
    as_charlie,
    acme,
    globex,
    monkeypatch,
):
    real = imports.customer_match
    holding, release = threading.Event(), threading.Event()

    def held(*, workspace, **values):
        match = real(workspace=workspace, **values)
        if workspace.pk == acme.pk and blocking.is_set():  # acme's import stops after its first row, uncommitted
            holding.set()
            release.wait(2 * BOUND)
        return match

    blocking = threading.Event()
    monkeypatch.setattr(imports, "customer_match", held)

    def acme_import():
        preview = upload(as_bob, acme, "email,name\n" + "".join(f"a{n}@example.com,A{n}\n" for n in range(50)))
        blocking.set()
        return as_bob.post(PROCESS, confirm_data(preview), follow=True).status_code

    theirs, their_outcome = in_thread(acme_import)
    try:
        assert holding.wait(BOUND), their_outcome

        def globex_import_and_export():
            preview = upload(as_charlie, globex, "email,name,external_id\nb@example.com,Bea,crm-1\nc@example.com,Cy,\n")
            done = as_charlie.post(PROCESS, confirm_data(preview), follow=True)
            assert "Imported 2 row(s): 2 new contact(s)" in done.content.decode()
            exported = as_charlie.get(CONTACTS)
            text = b"".join(exported.streaming_content).decode()
            return sorted(row["email"] for row in csv.DictReader(io.StringIO(text[1:])))

        mine, my_outcome = in_thread(globex_import_and_export)
        mine.join(BOUND)
        assert not mine.is_alive(), "globex's import waited for acme's"
        assert my_outcome == [["b@example.com", "c@example.com"]]
        assert not Customer.objects.filter(workspace=acme).exists()  # acme's, still uncommitted
    finally:
        release.set()
        theirs.join(2 * BOUND)
    assert their_outcome == [200]
    assert Customer.objects.filter(workspace=acme).count() == 50
