"""The "Payment providers" page: owners connect, see the URL and the events to select, paste a secret that is never
shown, send a signed test event, read the delivery log with outcomes, replay an event; others see nothing."""

import pytest
from django.urls import reverse

from conversions.models import ConversionEvent
from payments.connections import connection_create
from payments.models import Connection, Delivery
from payments.services import hook_receive
from tests.conftest import form_of
from tests.factories import ClickFactory
from tests.payments.providers import checkout_session, sid, stripe_event, stripe_signed

pytestmark = pytest.mark.django_db
ADD = reverse("admin:payments_connection_add")
LIST = reverse("admin:payments_connection_changelist")


def change(connection) -> str:
    return reverse("admin:payments_connection_change", args=[connection.pk])


def test_an_owner_connects_stripe_and_sees_the_url_and_the_events(as_alice, acme, settings):
    settings.PUBLIC_BASE_URL = "https://track.example.com"
    answer = as_alice.post(ADD, form_of(as_alice, ADD, workspace=acme.pk, provider="stripe", name="Main account"))
    connection = Connection.objects.get()
    assert answer.status_code == 302 and answer["Location"] == change(connection)
    page = as_alice.get(change(connection)).content.decode()
    assert f"https://track.example.com/hooks/payments/{connection.url_token}" in page
    for event in ("checkout.session.completed", "invoice.paid", "invoice_payment.paid", "refund.created"):
        assert f"<code>{event}</code>" in page
    assert "waiting for the signing secret" in page
    assert 'name="_save"' not in page and 'name="_continue"' not in page  # its buttons call the services
    secret_page = reverse("admin:payments_connection_secret", args=[connection.pk])
    saved = as_alice.post(secret_page, {"signing_secret": "whsec_pasted_once", "overlap_hours": 24})
    assert saved.status_code == 302
    page = as_alice.get(change(connection)).content.decode()
    assert "whsec_pasted_once" not in page and "connected" in page
    assert "Payment providers" in as_alice.get(LIST).content.decode()


def test_send_a_test_event_records_a_test_sale_shown_in_the_log(as_alice, acme):
    click = ClickFactory(link__post__workspace=acme)
    for provider, secret in (("stripe", "whsec_bo"), ("shopify", "shpss_bo")):
        connection = connection_create(workspace=acme, provider=provider, signing_secret=secret).connection
        answer = as_alice.post(reverse("admin:payments_connection_test", args=[connection.pk]), follow=True)
        page = answer.content.decode()
        sale = ConversionEvent.objects.filter(is_test=True).latest("pk")
        assert f"sale recorded: sale #{sale.pk}" in page and sale.click_id == click.pk
        assert 'id="delivery-log"' in page and ">test<" in page
    assert not ConversionEvent.objects.filter(is_test=False).exists()


def test_a_not_attributed_event_is_replayed_once_its_click_exists(as_alice, acme):
    connection = connection_create(workspace=acme, provider="stripe", signing_secret="whsec_bo").connection
    click = ClickFactory(link__post__workspace=acme)
    click_id = click.click_id
    click.delete()  # the click is gone (or not yet known) when the sale arrives
    session = checkout_session(mode="payment", amount=500, click_id=click_id, payment_intent=sid("pi"))
    body, headers = stripe_signed(stripe_event("checkout.session.completed", session), "whsec_bo")
    delivery = hook_receive(connection=connection, body=body, headers=headers)
    assert delivery.outcome == "not_attributed"
    page = as_alice.get(change(connection)).content.decode()
    assert "not attributed" in page and "unknown click id" in page
    ClickFactory(link__post__workspace=acme, click_id=click_id)
    replay = reverse("admin:payments_connection_replay", args=[connection.pk, delivery.pk])
    page = as_alice.post(replay, follow=True).content.decode()
    sale = ConversionEvent.objects.get()
    assert f"sale recorded: sale #{sale.pk}" in page
    assert as_alice.post(replay, follow=True).status_code == 200
    assert ConversionEvent.objects.count() == 1 and Delivery.objects.get().outcome == "duplicate"


def test_editors_and_other_workspaces_see_nothing(as_alice, as_bob, acme, globex):
    theirs = connection_create(workspace=globex, provider="stripe", signing_secret="whsec_x").connection
    assert as_alice.get(change(theirs)).status_code in (302, 404)
    assert as_alice.post(reverse("admin:payments_connection_test", args=[theirs.pk])).status_code == 403
    mine = connection_create(workspace=acme, provider="shopify").connection
    assert as_bob.get(change(mine)).status_code == 403
    assert as_bob.get(LIST).status_code == 403


def test_disconnect_stops_deliveries(as_alice, acme, client):
    connection = connection_create(workspace=acme, provider="stripe", signing_secret="whsec_bo").connection
    as_alice.post(reverse("admin:payments_connection_disconnect", args=[connection.pk]))
    body, headers = stripe_signed(stripe_event("customer.created", {"id": sid("cus")}), "whsec_bo")
    answer = client.post(
        f"/hooks/payments/{connection.url_token}", body, content_type="application/json", headers=headers
    )
    assert (answer.status_code, answer.json()) == (404, {"error": "unknown connection"})
