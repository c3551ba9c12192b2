"""The contact page's "Erase this person…" and "Export (JSON)": owners only, a confirmation step, never another
workspace's contact (docs/privacy.md)."""

import json

import pytest
from django.urls import reverse

from campaigns.models import Suppression
from customers.models import Customer
from customers.services import customer_match
from tests.factories import EndpointFactory
from webhooks.models import Event

pytestmark = pytest.mark.django_db
EMAIL = "ada@example.com"


@pytest.fixture
def ada(acme):
    EndpointFactory(workspace=acme)
    return customer_match(workspace=acme, channel="manual", email=EMAIL, name="Ada Lovelace").customer


def erase_url(customer) -> str:
    return reverse("admin:customers_customer_erase", args=[customer.pk])


def test_an_owner_confirms_then_the_person_is_erased(as_alice, ada):
    page = as_alice.get(reverse("admin:customers_customer_change", args=[ada.pk])).content.decode()
    assert 'id="contact-erase"' in page and 'id="contact-export"' in page
    confirm = as_alice.get(erase_url(ada))
    assert confirm.status_code == 200 and b"cannot be undone" in confirm.content
    assert Customer.objects.get(pk=ada.pk).email == EMAIL  # asking changes nothing
    # a POST without the confirmation changes nothing either
    assert as_alice.post(erase_url(ada)).status_code == 200
    assert Customer.objects.get(pk=ada.pk).erased_at is None

    done = as_alice.post(erase_url(ada), {"confirm": "yes"}, follow=True)
    assert done.redirect_chain[-1][0] == reverse("admin:customers_customer_changelist")
    assert f"Erased contact #{ada.pk}." in done.content.decode()
    erased = Customer.objects.get(pk=ada.pk)
    assert erased.erased_at is not None and (erased.email, erased.name) == ("", "")
    assert Suppression.objects.get().reason == "erased"
    assert Event.objects.filter(type="customer.erased", subject_id=ada.pk).exists()
    # gone from the list and from its page
    assert EMAIL not in as_alice.get(reverse("admin:customers_customer_changelist")).content.decode()
    assert as_alice.get(reverse("admin:customers_customer_change", args=[ada.pk])).status_code == 302
    assert as_alice.get(erase_url(ada)).status_code == 302


def test_an_owner_downloads_the_export(as_alice, ada):
    resp = as_alice.get(reverse("admin:customers_customer_person_export", args=[ada.pk]))
    assert resp.status_code == 200
    assert resp["Content-Disposition"] == f'attachment; filename="contact-{ada.pk}.json"'
    assert json.loads(resp.content)["customer"]["email"] == EMAIL


def test_editors_are_refused(as_bob, ada):
    page = as_bob.get(reverse("admin:customers_customer_change", args=[ada.pk])).content.decode()
    assert 'id="contact-erase"' not in page and 'id="contact-export"' not in page
    assert as_bob.get(erase_url(ada)).status_code == 403
    assert as_bob.post(erase_url(ada), {"confirm": "yes"}).status_code == 403
    assert as_bob.get(reverse("admin:customers_customer_person_export", args=[ada.pk])).status_code == 403
    assert Customer.objects.get(pk=ada.pk).email == EMAIL


def test_another_workspaces_owner_never_reaches_the_contact(as_charlie, ada):
    for resp in (
        as_charlie.get(erase_url(ada)),
        as_charlie.post(erase_url(ada), {"confirm": "yes"}),
        as_charlie.get(reverse("admin:customers_customer_person_export", args=[ada.pk])),
    ):
        assert resp.status_code == 302  # "does not exist", as for any contact it cannot see
    assert Customer.objects.get(pk=ada.pk).email == EMAIL
