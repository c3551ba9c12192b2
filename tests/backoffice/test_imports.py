"""Importing contacts from CSV: a dry run that previews created / matched / moved, then the import, through customer_match."""

import re

import pytest
from django.core.cache import cache
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from backoffice.contact_csv import MAX_ROWS
from customers.models import Customer, CustomerActivity
from customers.services import customer_match
from tests.factories import CustomerFactory

pytestmark = pytest.mark.django_db

IMPORT = reverse("admin:customers_customer_import")
PROCESS = reverse("admin:customers_customer_process_import")


def upload(client, workspace, text: str, name: str = "contacts.csv"):
    return client.post(
        IMPORT,
        {
            "workspace": workspace.pk,
            "format": "0",
            "import_file": SimpleUploadedFile(name, text.encode(), content_type="text/csv"),
        },
    )


def kept_uploads() -> int:
    """Uploads waiting in the cache for a confirmation, whichever cache the suite runs on."""
    if hasattr(cache, "_cache") and isinstance(cache._cache, dict):  # LocMemCache
        return sum(":import-upload:" in key and not key.endswith(":count") for key in cache._cache)
    return sum(not key.endswith(b":count") for key in cache._cache.get_client().keys("*:import-upload:*"))


def confirm_data(response) -> dict:
    form = response.context["confirm_form"]
    return {name: form.initial[name] for name in ("import_file_name", "original_file_name", "format", "workspace")}


@pytest.fixture
def known(acme):
    """grace is a contact; crm-7 is held by hopper, a contact without the email that will claim it."""
    grace = CustomerFactory(workspace=acme, email="grace@example.com", name="Grace", external_id="")
    hopper = customer_match(workspace=acme, channel="api", email="hopper@example.com", external_id="crm-7").customer
    return grace, hopper


CSV = (
    "email,name,external_id\nada@example.com,Ada Lovelace,crm-1\nGRACE@example.com,Grace H,\ngrace@example.com,,crm-7\n"
)


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
    [
        ("email,name\nnot-an-email,X\n", "Enter a valid email address."),
        ("email,name,external_id\n,Nobody,\n", "customer needs email or external_id"),
        ("email,name\n" + "x" * 250 + "@example.com,X\n", "At most 254 characters."),
        ("first,last\nAda,Lovelace\n", "The file needs a header row with email or external_id"),
    ],
)
def test_bad_rows_are_shown_and_nothing_can_be_confirmed(as_bob, acme, text, error):
    response = upload(as_bob, acme, text)
    assert response.status_code == 200
    page = response.content.decode()
    assert error in page and "Traceback" not in page
    assert "confirm_form" not in response.context or response.context["confirm_form"] is None
    assert not Customer.objects.exists()


def test_an_over_long_file_is_refused_before_any_row_is_matched(as_bob, acme, monkeypatch):
    monkeypatch.setattr("backoffice.imports.customer_match", lambda **kwargs: pytest.fail("no row may be matched"))
    rows = "".join(f"p{n}@example.com,P {n}\n" for n in range(MAX_ROWS + 1))
    beyond = "x,y,z,too,many,cells\n" * 5000  # never read: the reading stops at row MAX_ROWS + 1
    response = upload(as_bob, acme, "email,name\n" + rows + beyond)
    assert response.status_code == 200
    assert "At most 1,000 rows per file; this one has more. Import it in parts." in response.content.decode()
    assert response.context["confirm_form"] is None if "confirm_form" in response.context else True
    assert not Customer.objects.exists() and kept_uploads() == 0


@pytest.mark.parametrize(
    ("data", "error"),
    [
        (
            b"email,name\nada@example.com,Ada\x00Lovelace\n",
            "The file holds a NUL character (line 2): it is not a CSV text file.",
        ),
        (
            "email,name\nad\u00e9@example.com,Ad\u00e9\n".encode("latin-1"),
            "The file is not UTF-8 text: in a spreadsheet, save it as CSV UTF-8.",
        ),
        (b"email,name\nada@example.com,Ada,Lovelace\n", "Row 1 has more cells than the header row has columns."),
        (
            b'email,name\n"ada@example.com,Ada\n' + b"x" * 200_000 + b"\n",
            "The file cannot be read as CSV: field larger than field limit (131072).",
        ),
    ],
)
def test_a_file_that_is_not_clean_csv_is_a_clear_error_and_imports_nothing(as_bob, acme, data, error):
    response = as_bob.post(
        IMPORT,
        {
            "workspace": acme.pk,
            "format": "0",
            "import_file": SimpleUploadedFile("contacts.csv", data, content_type="text/csv"),
        },
    )
    assert response.status_code == 200 and error in response.content.decode()
    assert not Customer.objects.exists() and kept_uploads() == 0


def test_headers_are_read_in_any_case_and_order_and_other_columns_ignored(as_bob, acme):
    preview = upload(as_bob, acme, "\ufeffPhone, Name ,EMAIL\n+1 555,Ada,ada@example.com\n\n")
    assert preview.context["outcomes"] == {"created": 1, "matched": 0, "moved": 0}
    as_bob.post(PROCESS, confirm_data(preview))
    assert Customer.objects.get().name == "Ada"


def test_the_preview_counts_what_the_import_does_whatever_the_batches(as_bob, acme, monkeypatch):
    monkeypatch.setattr("backoffice.imports.BATCH_ROWS", 3)  # in file order: rows 1-3, then 4-5
    text = (
        "email,name,external_id\nada@example.com,Ada,\nb@example.com,,\nc@example.com,,crm-1\nd@example.com,,\n"
        "ADA@example.com,,crm-1\n"
    )  # row 5 is Ada again and takes crm-1 from row 3's contact
    preview = upload(as_bob, acme, text)
    assert preview.context["outcomes"] == {"created": 4, "matched": 0, "moved": 1}
    assert [row.outcome for row in preview.context["result"].valid_rows()] == ["created"] * 4 + ["moved"]
    done = as_bob.post(PROCESS, confirm_data(preview), follow=True)
    assert "Imported 5 row(s): 4 new contact(s), 0 matched, 1 external id(s) moved." in done.content.decode()


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
    assert (
        f'href="{IMPORT}" class="import_link" id="import-csv"'
        in as_bob.get(reverse("admin:customers_customer_changelist")).content.decode()
    )
