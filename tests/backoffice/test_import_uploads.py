"""Uploaded import files in the shared cache: kept only once previewed clean, for an hour, three per user, and
forgotten on import, on "Choose another file" and when replaced."""

import pytest
from django.core.cache import cache
from django.urls import reverse

from backoffice.uploads import LIFETIME_SECONDS, PER_USER
from customers.models import Customer
from tests.backoffice.conftest import client_for
from tests.backoffice.test_imports import PROCESS, confirm_data, upload

pytestmark = pytest.mark.django_db

# A file of about 1 MB: 100 contacts, each with a long column the import ignores.
BIG = "email,name,notes\n" + "".join(f"p{n}@example.com,P {n},{'n' * 9850}\n" for n in range(100))


def cache_bytes() -> int:
    """What every entry of the cache holds, whichever cache the suite runs on."""
    if isinstance(getattr(cache, "_cache", None), dict):  # LocMemCache: pickled values
        return sum(len(value) for value in cache._cache.values())
    client = cache._cache.get_client()
    return sum(client.memory_usage(key) or 0 for key in client.scan_iter())


def kept(preview) -> bool:
    """Whether the previewed upload can still be confirmed."""
    return "confirm_form" in preview.context and preview.context["confirm_form"] is not None


def test_twenty_big_uploads_left_unconfirmed_keep_three_small_ones(as_bob, acme):
    assert 980_000 < len(BIG.encode()) <= 1_000_000
    previews = [upload(as_bob, acme, BIG) for _ in range(20)]
    assert all(kept(preview) for preview in previews)
    assert cache_bytes() < 300_000  # three files' contacts, without the ignored column (20 MB before)
    lost = as_bob.post(PROCESS, confirm_data(previews[-PER_USER - 1]), follow=True)
    assert "The uploaded file is no longer kept" in lost.content.decode() and not Customer.objects.exists()
    done = as_bob.post(PROCESS, confirm_data(previews[-PER_USER]), follow=True)
    assert "Imported 100 row(s): 100 new contact(s)" in done.content.decode()


def test_an_upload_is_kept_for_an_hour(as_bob, acme, monkeypatch):
    timeouts = []
    real_set = cache.set
    monkeypatch.setattr(
        cache,
        "set",
        lambda key, value, timeout=None, **kw: timeouts.append(timeout) or real_set(key, value, timeout, **kw),
    )
    assert kept(upload(as_bob, acme, "email\nada@example.com\n"))
    assert timeouts and set(timeouts) == {LIFETIME_SECONDS} == {3600}


@pytest.mark.parametrize(
    "text",
    [
        BIG + "not-an-email,X,\n",  # a bad row
        BIG.replace("email,", "mail,", 1),  # no usable header
        "email\n" + "a@example.com\n" * 1001,  # too long
    ],
)
def test_a_refused_file_is_never_kept(as_bob, acme, text):
    preview = upload(as_bob, acme, text)
    assert preview.status_code == 200 and not kept(preview)
    assert cache_bytes() < 1000


def test_the_import_forgets_the_upload_so_a_repeat_imports_nothing(as_bob, acme):
    preview = upload(as_bob, acme, BIG)
    as_bob.post(PROCESS, confirm_data(preview))
    assert Customer.objects.count() == 100 and cache_bytes() < 1000
    again = as_bob.post(PROCESS, confirm_data(preview), follow=True)
    assert "The uploaded file is no longer kept" in again.content.decode()


def test_choose_another_file_forgets_the_upload(as_bob, acme):
    preview = upload(as_bob, acme, BIG)
    assert 'name="cancel" value="Choose another file"' in preview.content.decode()
    answer = as_bob.post(PROCESS, {**confirm_data(preview), "cancel": "Choose another file"}, follow=True)
    assert answer.redirect_chain[-1][0] == reverse("admin:customers_customer_import")
    assert "Nothing was imported." in answer.content.decode()
    assert cache_bytes() < 1000 and not Customer.objects.exists()


def test_an_upload_is_confirmed_by_its_own_user_only(as_bob, alice, acme):
    preview = upload(as_bob, acme, "email\nada@example.com\n")
    stolen = client_for(alice).post(PROCESS, confirm_data(preview), follow=True)
    assert "The uploaded file is no longer kept" in stolen.content.decode() and not Customer.objects.exists()
    as_bob.post(PROCESS, confirm_data(preview))
    assert Customer.objects.filter(email="ada@example.com").exists()


@pytest.mark.parametrize("name", ["count", "9-abc", "../x", ""])
def test_a_forged_upload_name_is_lost_not_an_error(as_bob, acme, name):
    preview = upload(as_bob, acme, "email\nada@example.com\n")
    answer = as_bob.post(PROCESS, {**confirm_data(preview), "import_file_name": name}, follow=True)
    assert answer.status_code == 200 and not Customer.objects.exists()
