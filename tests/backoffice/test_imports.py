"""Importing contacts from CSV: a dry run that previews created / matched / moved, then the import, through customer_match."""
import re

import pytest
from django.core.cache import cache
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from customers.models import Customer, CustomerActivity
from customers.services import customer_match
from tests.factories import CustomerFactory

pytestmark = pytest.mark.django_db

IMPORT = reverse("admin:customers_customer_import")
PROCESS = reverse("admin:customers_customer_process_import")


def upload(client, workspace, text: str, name: str = "contacts.csv"):
    return client.post(IMPORT, {"workspace": workspace.pk, "format": "0",
                                "import_file": SimpleUploadedFile(name, text.encode(), content_type="text/csv")})


def confirm_data(response) -> dict:
    form = response.context["confirm_form"]
    return {name: form.initial[name] for name in ("import_file_name", "original_file_name", "format", "workspace")}


@pytest.fixture
def known(acme):
    """grace is a contact; crm-7 is held by hopper, a contact without the email that will claim it."""
    grace = CustomerFactory(workspace=acme, email="grace@example.com", name="Grace", external_id="")
    hopper = customer_match(workspace=acme, channel="api", email="hopper@example.com", external_id="crm-7").customer
    return grace, hopper


CSV = "email,name,external_id\nada@example.com,Ada Lovelace,crm-1\nGRACE@example.com,Grace H,\ngrace@example.com,,crm-7\n"


def test_dry_run_previews_then_the_import_goes_through_the_matching_service(as_bob, acme, known):
    grace, hopper = known
    before = Customer.objects.count()
    preview = upload(as_bob, acme, CSV)
    assert preview.status_code == 200
    page = preview.content.decode()
    assert preview.context["outcomes"] == {"created": 1, "matched": 1, "moved": 1}
    assert re.search(r"<strong>1</strong> new contact\b", page) and "Import 3 rows" in page
    assert "external id crm-7 moves here from hopper@example.com" in page
    assert Customer.objects.count() == before  # a dry run stores nothing
    assert Customer.objects.get(pk=hopper.pk).external_id == "crm-7"

    done = as_bob.post(PROCESS, confirm_data(preview), follow=True)
    assert "Imported 3 row(s): 1 new contact(s), 1 matched, 1 external id(s) moved." in done.content.decode()
    ada = Customer.objects.get(workspace=acme, email="ada@example.com")
    assert (ada.name, ada.external_id, ada.source) == ("Ada Lovelace", "crm-1", "manual")
    grace.refresh_from_db()
    hopper.refresh_from_db()
    assert (grace.name, grace.external_id, hopper.external_id) == ("Grace", "crm-7", "")  # a name is never replaced
    assert CustomerActivity.objects.filter(customer=grace, kind="external_id_moved_in", channel="manual").exists()
    assert CustomerActivity.objects.filter(customer=ada, kind="created", channel="manual").exists()


@pytest.mark.parametrize(
    ("text", "error"),
    [("email,name\nnot-an-email,X\n", "Enter a valid email address."),
     ("email,name,external_id\n,Nobody,\n", "customer needs email or external_id"),
     ("email,name\n" + "x" * 250 + "@example.com,X\n", "At most 254 characters."),
     ("first,last\nAda,Lovelace\n", "The file needs a header row with email or external_id")],
)
def test_bad_rows_are_shown_and_nothing_can_be_confirmed(as_bob, acme, text, error):
    response = upload(as_bob, acme, text)
    assert response.status_code == 200
    page = response.content.decode()
    assert error in page and "Traceback" not in page
    assert "confirm_form" not in response.context or response.context["confirm_form"] is None
    assert not Customer.objects.exists()


def test_too_many_rows(as_bob, acme, monkeypatch):
    monkeypatch.setattr("backoffice.imports.MAX_ROWS", 2)
    response = upload(as_bob, acme, "email\na@example.com\nb@example.com\nc@example.com\n")
    assert "At most 2 rows per file; this one has 3." in response.content.decode()
    assert not Customer.objects.exists()


def test_the_confirmation_cannot_name_another_workspace(as_bob, acme, globex):
    preview = upload(as_bob, acme, "email\nada@example.com\n")
    data = {**confirm_data(preview), "workspace": globex.pk}
    response = as_bob.post(PROCESS, data)
    assert response.status_code == 200 and "Select a valid choice" in response.content.decode()
    assert not Customer.objects.exists()


def test_nobody_imports_into_a_workspace_of_others(as_charlie, acme, globex):
    response = upload(as_charlie, acme, "email\nada@example.com\n")
    assert "Choose one of your workspaces." in response.content.decode()
    assert not Customer.objects.filter(workspace=acme).exists()


def test_an_upload_lost_from_the_cache_imports_nothing_and_says_so(as_bob, acme):
    preview = upload(as_bob, acme, "email\nada@example.com\n")
    cache.clear()
    response = as_bob.post(PROCESS, confirm_data(preview), follow=True)
    assert "please upload it again" in response.content.decode()
    assert not Customer.objects.exists()


def test_the_list_offers_the_import(as_bob, acme):
    assert f'href="{IMPORT}" class="import_link" id="import-csv"' in as_bob.get(reverse("admin:customers_customer_changelist")).content.decode()
