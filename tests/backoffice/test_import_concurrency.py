"""A maximal contact import and the live API at once, on PostgreSQL: the import never holds a contact's row for long."""

import threading

import pytest

from backoffice import imports
from backoffice.contact_csv import MAX_ROWS
from customers.models import Customer
from tests.backoffice.conftest import client_for
from tests.backoffice.test_imports import PROCESS, confirm_data, upload
from tests.conftest import ApiClient, run_in_threads
from tests.factories import ApiTokenFactory, ClickFactory, CustomerFactory

HALFWAY = MAX_ROWS // 2
# Row 1 gives grace an external id and a name: a lock on her row, an advisory lock on the id. Rows 2 to 1,000
# are new people; the import stops at row HALFWAY until the conversion has been answered.
CSV = "email,name,external_id\ngrace@example.com,Grace Hopper,crm-7\n" + "".join(
    f"person{n}@example.com,Person {n},\n" for n in range(2, MAX_ROWS + 1)
)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("step", ["preview", "import"])
def test_a_conversion_for_a_contact_of_a_running_maximal_import_is_not_blocked(acme, bob, monkeypatch, step):
    grace = CustomerFactory(workspace=acme, email="grace@example.com", name="", external_id="")
    token = ApiTokenFactory(workspace=acme)
    click = ClickFactory(link__post__workspace=acme, workspace=acme)
    as_bob = client_for(bob)
    preview = upload(as_bob, acme, CSV) if step == "import" else None

    halfway, answered = threading.Event(), threading.Event()
    real_match = imports.customer_match

    def match(**kwargs):
        if kwargs["email"] == f"person{HALFWAY}@example.com" and not halfway.is_set():
            halfway.set()
            assert answered.wait(timeout=30)
        return real_match(**kwargs)

    monkeypatch.setattr(imports, "customer_match", match)

    def run(i: int):
        if i == 0:
            return upload(as_bob, acme, CSV) if step == "preview" else as_bob.post(PROCESS, confirm_data(preview))
        assert halfway.wait(timeout=60)
        try:
            body = {
                "event": "lead",
                "click_id": click.click_id,
                "customer": {"email": "grace@example.com", "name": "Grace", "external_id": "crm-7"},
            }
            return ApiClient().post("/api/v1/conversions", body, token=token)
        finally:
            answered.set()

    importing, conversion = run_in_threads(2, run)
    assert conversion.status_code == 201, conversion.content  # 503 after the 3 s lock timeout before
    assert conversion.json()["customer"]["id"] == grace.pk
    if step == "preview":
        assert importing.status_code == 200 and len(importing.context["result"].valid_rows()) == MAX_ROWS
        assert Customer.objects.count() == 1
    else:
        assert importing.status_code == 302 and Customer.objects.count() == MAX_ROWS
