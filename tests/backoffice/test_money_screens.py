"""The back office's money: the workspace currency setting, test tokens, test data only when asked, and deleting it."""

import re

import pytest
from django.urls import reverse

from conversions.models import ConversionEvent
from tests.factories import ConversionEventFactory, EmailSendFactory, EnrollmentFactory, RefundFactory
from workspaces.models import ApiToken

pytestmark = pytest.mark.django_db

CONVERSIONS = reverse("admin:conversions_conversionevent_changelist")


def test_owners_set_the_workspace_currency(as_alice, acme):
    page = reverse("admin:workspaces_workspace_change", args=[acme.pk])
    assert as_alice.post(page, {"name": "Acme", "allowed_origins": "", "currency": "EUR"}).status_code == 302
    acme.refresh_from_db()
    assert acme.currency == "EUR"
    response = as_alice.post(page, {"name": "Acme", "allowed_origins": "", "currency": "XYZ"})
    assert response.status_code == 200 and "Select a valid choice" in response.content.decode()
    acme.refresh_from_db()
    assert acme.currency == "EUR"


def test_the_token_screen_makes_test_tokens(as_alice, acme):
    add = reverse("admin:workspaces_apitoken_add")
    nonce = re.search(r'name="nonce" value="([^"]+)"', as_alice.get(add).content.decode()).group(1)
    created = as_alice.post(add, {"workspace": acme.pk, "name": "Sandbox", "test": "on", "nonce": nonce})
    secret = re.search(r'id="token-secret" value="(lf_test_[A-Za-z0-9_-]{43})"', created.content.decode()).group(1)
    token = ApiToken.objects.get(name="Sandbox")
    assert token.is_test and secret[8:16] == token.prefix
    listed = as_alice.get(reverse("admin:workspaces_apitoken_changelist")).content.decode()
    assert f"lf_test_{token.prefix}…" in listed


def test_conversions_list_live_data_and_test_data_only_when_asked(as_bob, acme, globex):
    live = ConversionEventFactory(click__link__post__workspace=acme, event="sale", value_cents=5000, currency="JPY")
    RefundFactory(conversion=live, amount_cents=1200)
    test = ConversionEventFactory(click__link__post__workspace=acme, event="sale", value_cents=777, is_test=True)
    ConversionEventFactory(click__link__post__workspace=globex, event="sale", value_cents=1, is_test=True)
    response = as_bob.get(CONVERSIONS)
    assert [row.pk for row in response.context["cl"].result_list] == [live.pk]
    assert "5,000 JPY" in response.content.decode() and "1,200 JPY" in response.content.decode()
    asked = as_bob.get(CONVERSIONS, {"mode": "test"})
    assert [row.pk for row in asked.context["cl"].result_list] == [test.pk]  # globex's stays invisible


def test_contacts_recipients_and_sends_list_live_rows_and_test_rows_only_when_asked(as_bob, acme, globex):
    live = EnrollmentFactory(campaign__workspace=acme, customer__email="ada@example.com")
    test = EnrollmentFactory(campaign=live.campaign, customer__email="ada@example.com", customer__is_test=True)
    EnrollmentFactory(campaign__workspace=globex, customer__is_test=True)
    EmailSendFactory(enrollment=live)
    EmailSendFactory(enrollment=test, status="test")
    for name, live_row, test_row in [
        ("customers_customer", live.customer, test.customer),
        ("campaigns_enrollment", live, test),
    ]:
        url = reverse(f"admin:{name}_changelist")
        assert [row.pk for row in as_bob.get(url).context["cl"].result_list] == [live_row.pk]
        assert [row.pk for row in as_bob.get(url, {"mode": "test"}).context["cl"].result_list] == [test_row.pk]
    sends = reverse("admin:campaigns_emailsend_changelist")
    assert [row.status for row in as_bob.get(sends).context["cl"].result_list] == ["sent"]
    assert [row.status for row in as_bob.get(sends, {"mode": "test"}).context["cl"].result_list] == ["test"]
    for contact, mode in ((live.customer, "Live"), (test.customer, "Test data: made by a test token")):
        page = as_bob.get(reverse("admin:customers_customer_change", args=[contact.pk])).content.decode()
        assert re.search(r"Mode:</label>\s*<div class=\"readonly\">" + mode, page)


def test_owners_delete_test_data_in_one_click_after_a_confirmation(as_alice, as_bob, acme, globex):
    live = ConversionEventFactory(click__link__post__workspace=acme, event="sale", value_cents=5000)
    RefundFactory(
        conversion=ConversionEventFactory(
            click__link__post__workspace=acme, event="sale", is_test=True, value_cents=10000
        )
    )
    theirs = ConversionEventFactory(click__link__post__workspace=globex, event="lead", is_test=True)
    url = reverse("admin:workspaces_workspace_delete_test_data", args=[acme.pk])
    settings_page = as_alice.get(reverse("admin:workspaces_workspace_change", args=[acme.pk])).content.decode()
    assert url in settings_page
    confirm = as_alice.get(url)
    assert "1 test conversion(s), 1 test refund(s), 0 test send(s)" in confirm.content.decode()
    assert as_bob.post(url, {"confirm": "yes"}).status_code in (302, 403)  # an editor: refused or sent away
    assert ConversionEvent.objects.filter(workspace=acme, is_test=True).exists()
    done = as_alice.post(url, {"confirm": "yes"}, follow=True)
    assert (
        "Deleted 1 test conversion(s), 1 test refund(s), 0 test send(s), 0 test enrollment(s), 0 test "
        "suppression(s), 0 test contact(s), 0 test webhook event(s)." in done.content.decode()
    )
    assert list(ConversionEvent.objects.values_list("pk", flat=True).order_by("pk")) == [live.pk, theirs.pk]
    assert (
        as_alice.post(
            reverse("admin:workspaces_workspace_delete_test_data", args=[globex.pk]), {"confirm": "yes"}
        ).status_code
        == 302
    )
    assert ConversionEvent.objects.filter(pk=theirs.pk).exists()  # another workspace's: not hers to delete


def test_owners_set_the_email_layout_and_bad_values_change_nothing(as_alice, acme):
    page = reverse("admin:workspaces_workspace_change", args=[acme.pk])
    fields = {"name": "Acme", "allowed_origins": "", "currency": "USD"}
    layout = {"email_logo_url": "https://cdn.acme.example/logo.png", "email_brand_color": "#FF5500"}
    saved = as_alice.post(page, {**fields, **layout, "postal_address": "1 Main St\nSpringfield"})
    assert saved.status_code == 302
    acme.refresh_from_db()
    assert (acme.email_logo_url, acme.email_brand_color, acme.postal_address) == (
        "https://cdn.acme.example/logo.png",
        "#ff5500",
        "1 Main St\nSpringfield",
    )
    for bad, message in [
        ({"email_logo_url": "http://cdn.acme.example/logo.png"}, "logo URL must be an https URL"),
        ({"email_brand_color": "red;background:url(x)"}, "Ensure this value has at most 7 characters"),
        ({"email_brand_color": "#12345g"}, "brand colour must be #rrggbb"),
        ({"postal_address": "x" * 501}, "Ensure this value has at most 500 characters"),
    ]:
        response = as_alice.post(page, {**fields, **layout, **bad})
        assert response.status_code == 200 and message in response.content.decode(), bad
    acme.refresh_from_db()
    assert (acme.email_brand_color, acme.postal_address) == ("#ff5500", "1 Main St\nSpringfield")
