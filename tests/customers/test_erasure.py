"""Erasing a person (docs/privacy.md): nothing of them left in any table, every number unchanged, the address still
suppressed, a `customer.erased` event; exporting them; the API's and the CLI's doors."""

import json
from datetime import UTC, datetime

import pytest
import time_machine
from django.core import mail
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.utils import timezone

from campaigns.broadcasts import broadcast_save, broadcast_schedule
from campaigns.digests import email_digest
from campaigns.models import BroadcastRecipient, EmailSend, Enrollment, Suppression
from campaigns.segments import segment_save
from campaigns.sending import run_pass
from campaigns.services import suppression_add
from clicks.models import Click, Link
from conversions.models import ConversionEvent
from customers.erasure import customer_erase, customer_export
from customers.models import ContactTag, Customer, CustomerActivity
from customers.tags import contact_tags_add
from payments.models import Connection, Delivery, Reference
from rollups.services import numbers_roll_up
from tests.conftest import assert_api_error
from tests.factories import (
    CampaignEmailFactory,
    CampaignFactory,
    ClickFactory,
    EndpointFactory,
    LinkFactory,
    PostFactory,
)
from webhooks.models import Event
from webhooks.outbox import events_dispatch
from workspaces.tokens import api_token_create

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 24, 15, 0, tzinfo=UTC)
EMAIL, NAME = "Ada.Lovelace@Example.com", "Ada Lovelace"
CUSTOMERS = "/api/v1/customers"


@pytest.fixture(autouse=True)
def clock():
    with time_machine.travel(NOW, tick=False) as traveller:
        yield traveller


@pytest.fixture
def shop(acme):
    campaign = CampaignFactory(workspace=acme, slug="spring")
    CampaignEmailFactory(campaign=campaign, position=1, delay_minutes=0, active=True)
    link = LinkFactory(post=PostFactory(workspace=acme, campaign=campaign))
    EndpointFactory(workspace=acme)  # wants every event type but clicks: their bodies hold the person
    return {"campaign": campaign, "link": link}


def visit(client, link) -> str:
    """A click as the redirect records it, with a browser's user agent and a referrer naming the person."""
    return ClickFactory(
        link=link,
        user_agent="Mozilla/5.0 (Windows NT 10.0; Win64; x64) AdaBrowser/1.0",
        referrer=f"https://mail.example/inbox?to={EMAIL}",
        device="desktop",
        browser="Other",
        referrer_domain="mail.example",
        country="GB",
        city="Adaville",  # her town, from an operator's city database (clicks/geo.py)
    ).click_id


def person_everywhere(api, token, shop, acme) -> Customer:
    """Ada, as every path that names a person records her: a click, a lead and a sale (with meta, a label and an
    idempotency key), a campaign lead, an email sent, an unsubscription, a payment provider's event and ids,
    webhook events dispatched; the roll-up run half way."""
    click_id = visit(api, shop["link"])
    customer = {"email": EMAIL, "name": NAME, "external_id": "crm-ada", "avatar_url": "https://img.example/ada.png"}
    lead = api.post(
        "/api/v1/conversions",
        {"event": "lead", "click_id": click_id, "customer": customer, "meta": {"note": f"{NAME} <{EMAIL}>"}},
        token=token,
        HTTP_IDEMPOTENCY_KEY="lead-ada",
    )
    assert lead.status_code == 201, lead.content
    numbers_roll_up()
    sale = api.post(
        "/api/v1/conversions",
        {
            "event": "sale",
            "click_id": click_id,
            "value_cents": 4900,
            "event_name": f"Pro plan for {NAME}",
            "customer": {"email": EMAIL.lower()},
        },
        token=token,
    )
    assert sale.status_code == 201, sale.content
    assert api.post("/api/v1/campaigns/spring/leads", {"email": EMAIL, "name": NAME}, token=token).status_code in (
        200,
        201,
    )
    assert run_pass().counts()["sent"] == 1
    ada = Customer.objects.get(email=EMAIL)
    # A tag holding her name, and a broadcast to her, clicked from her mail client.
    contact_tags_add(customer=ada, names=[NAME, "vip"])
    segment = segment_save(workspace=acme, name="VIPs", filters={"tags": ["vip"]})
    broadcast_schedule(broadcast=broadcast_save(workspace=acme, segment=segment, name="News", subject="N", body="Hi"))
    assert run_pass().counts()["sent"] == 1
    Click.objects.create(
        workspace=acme,
        link=Link.objects.filter(workspace=acme).first(),
        user_agent="AdaMailClient/3.0",
        broadcast_recipient_id=BroadcastRecipient.objects.get(customer=ada).pk,
    )
    suppression_add(workspace=acme, email=EMAIL, reason="unsubscribed", channel="manual")
    connection_ = Connection.objects.create(workspace=acme, provider="stripe")
    Reference.objects.create(workspace=acme, provider="stripe", kind="customer", ref="cus_ADA", customer=ada)
    Reference.objects.create(workspace=acme, provider="stripe", kind="subscription", ref="sub_ADA", customer=ada)
    Delivery.objects.create(
        workspace=acme,
        connection=connection_,
        event_id="evt_1",
        event_type="checkout.session.completed",
        outcome="sale",
        conversion=ConversionEvent.objects.get(pk=sale.json()["id"]),
        body=json.dumps({"customer": "cus_ADA", "customer_details": {"email": EMAIL, "name": NAME}}),
        received_at=timezone.now(),
    )
    Delivery.objects.create(
        workspace=acme,
        connection=connection_,
        event_id="evt_2",
        event_type="invoice.paid",
        outcome="not_attributed",
        body=json.dumps({"customer": "cus_ADA", "customer_email": EMAIL.upper()}),
        received_at=timezone.now(),
    )
    # A click on a tracked link of her email (clicks/recipients.py): known to be hers through the send.
    Click.objects.create(
        workspace=acme,
        link=Link.objects.filter(workspace=acme).first(),
        user_agent="AdaMailClient/2.0",
        city="Adaborough",
        email_send_id=EmailSend.objects.get(enrollment__customer=ada).pk,
    )
    events_dispatch(workspace_id=acme.pk)
    return ada


def traces(*needles: str) -> list[tuple[str, str, str]]:
    """(table, column, needle) of every text, varchar, json, jsonb or array column of every table in the database
    holding one of the needles, in any letter case."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT table_name, column_name FROM information_schema.columns"
            " WHERE table_schema = current_schema() AND (data_type IN ('text', 'character varying', 'json', 'jsonb',"
            " 'ARRAY', 'USER-DEFINED'))"
        )
        columns = cursor.fetchall()
        assert len(columns) > 50  # every app's tables, the framework's and procrastinate's
        found = []
        for table, column in columns:
            for needle in needles:
                cursor.execute(
                    f'SELECT count(*) FROM "{table}" WHERE "{column}"::text ILIKE %s',
                    ["%" + needle.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"],
                )
                if cursor.fetchone()[0]:
                    found.append((table, column, needle))
    return found


def numbers(api, token) -> dict:
    """What the integrator and the dashboard read: the analytics over the whole window, by day and by link."""
    out = {}
    for group in ("day", "link"):
        resp = api.get("/api/v1/analytics", {"group_by": group}, token=token)
        assert resp.status_code == 200, resp.content
        out[group] = resp.json()
    return out


def test_erasure_leaves_no_trace_of_the_person_and_every_number_unchanged(api, acme, acme_token, shop):
    ada = person_everywhere(api, acme_token, shop, acme)
    found = traces(EMAIL, NAME, "crm-ada", "cus_ADA", "AdaBrowser", "AdaMailClient", "Adaville", "Adaborough")
    assert {t[2] for t in found} == {
        EMAIL,
        NAME,
        "crm-ada",
        "cus_ADA",
        "AdaBrowser",
        "AdaMailClient",
        "Adaville",
        "Adaborough",
    }
    before = numbers(api, acme_token)
    assert before["link"]["data"]  # the numbers are not empty
    sends = EmailSend.objects.count()

    resp = api.delete(f"{CUSTOMERS}/{ada.pk}", HTTP_AUTHORIZATION=f"Bearer {acme_token.secret}")
    assert resp.status_code == 204, resp.content

    needles = (
        *(EMAIL, NAME, "crm-ada", "cus_ADA", "AdaBrowser", "AdaMailClient", "Adaville", "Adaborough"),
        *("mail.example/inbox", "img.example"),
    )
    assert traces(*needles) == []
    assert numbers(api, acme_token) == before
    numbers_roll_up()
    assert numbers(api, acme_token) == before
    # their conversions are counted, pointing to nobody; their enrollment and send stay, counted
    assert ConversionEvent.objects.filter(workspace=acme).count() == 2
    assert not ConversionEvent.objects.filter(customer__isnull=False).exists()
    assert EmailSend.objects.count() == sends
    enrollment = Enrollment.objects.get(customer=ada)
    assert enrollment.state == "completed" and enrollment.next_send_at is None  # its one email went before
    assert not CustomerActivity.objects.filter(customer=ada).exists()
    assert not ContactTag.objects.filter(customer=ada).exists()
    assert BroadcastRecipient.objects.get(customer=ada).status == "sent"  # still counted for its broadcast
    # the address is suppressed as its digest, nothing else
    assert list(Suppression.objects.values_list("email", "reason")) == [
        (email_digest(workspace_id=acme.pk, email=EMAIL), "erased")
    ]
    # nobody reads them any more, and erasing again is unknown
    assert_api_error(api.get(f"{CUSTOMERS}/{ada.pk}", token=acme_token), 404, "unknown customer")
    assert api.get(CUSTOMERS, token=acme_token).json()["data"] == []
    assert_api_error(
        api.delete(f"{CUSTOMERS}/{ada.pk}", HTTP_AUTHORIZATION=f"Bearer {acme_token.secret}"), 404, "unknown customer"
    )
    # the webhook event carries the id only
    erased = Event.objects.get(type="customer.erased")
    assert erased.subject_id == ada.pk
    events_dispatch(workspace_id=acme.pk)
    erased.refresh_from_db()
    assert erased.data == {"id": ada.pk}
    # the events about her from before keep their type and object id, nothing else
    sale_created = Event.objects.get(type="sale.created")
    assert sale_created.data == {"id": sale_created.subject_id, "erased": True} and sale_created.detail == {}


def test_an_erased_address_is_never_mailed_again_even_as_a_new_lead(api, acme, acme_token, shop):
    ada = person_everywhere(api, acme_token, shop, acme)
    customer_erase(customer=ada)
    mail.outbox.clear()
    # the person comes back by a new lead (any letter case): a new contact, suppressed, never mailed
    again = api.post("/api/v1/campaigns/spring/leads", {"email": EMAIL.upper(), "name": NAME}, token=acme_token)
    assert again.status_code == 200 and again.json()["outcome"] == "suppressed"
    click_id = visit(api, shop["link"])
    sale = api.post(
        "/api/v1/conversions",
        {"event": "lead", "click_id": click_id, "customer": {"email": EMAIL}},
        token=acme_token,
    )
    assert sale.status_code == 201
    back = Customer.objects.get(email__iexact=EMAIL)
    assert back.pk != ada.pk
    assert api.get(f"{CUSTOMERS}/{back.pk}", token=acme_token).json()["suppressed"]["reason"] == "erased"
    # even an enrollment made by hand, around the checks, is never mailed: the sender checks the digest
    Enrollment.objects.create(
        workspace=acme,
        campaign=shop["campaign"],
        customer=back,
        enrolled_at=timezone.now(),
        next_send_at=timezone.now(),
    )
    result = run_pass()
    assert result.counts()["sent"] == 0 and result.counts()["skipped"] == 1
    assert mail.outbox == []


def test_export_holds_everything_known_and_needs_its_scope(api, acme, acme_token, shop):
    ada = person_everywhere(api, acme_token, shop, acme)
    resp = api.get(f"{CUSTOMERS}/{ada.pk}/export", token=acme_token)
    assert resp.status_code == 200, resp.content
    body = resp.json()
    assert body["customer"]["email"] == EMAIL and body["customer"]["name"] == NAME
    assert [c["event"] for c in body["conversions"]] == ["lead", "sale"]
    assert body["conversions"][0]["meta"] == {"note": f"{NAME} <{EMAIL}>"}
    assert "AdaBrowser" in body["clicks"][0]["user_agent"]
    assert [e["campaign"] for e in body["enrollments"]] == ["spring"]
    assert body["emails"][0]["to"] == EMAIL
    assert body["tags"] == ["ada lovelace", "vip"]
    assert [(b["broadcast"], b["to"], b["status"]) for b in body["broadcasts"]] == [("News", EMAIL, "sent")]
    assert [s["reason"] for s in body["suppressions"]] == ["unsubscribed"]
    assert {r["id"] for r in body["payment_references"]} == {"cus_ADA", "sub_ADA"}
    assert {e["event_id"] for e in body["payment_events"]} == {"evt_1", "evt_2"}
    assert body["activity"][0]["kind"] == "created"
    assert api.get(f"{CUSTOMERS}/ext_crm-ada/export", token=acme_token).json() == body
    # the scopes: export needs customers:read, erasure customers:write; a read token does neither
    reader = api_token_create(workspace=acme, name="reader", scopes=["read"]).secret
    assert_api_error(api.get(f"{CUSTOMERS}/{ada.pk}/export", token=reader), 403, "forbidden")
    assert_api_error(api.delete(f"{CUSTOMERS}/{ada.pk}", HTTP_AUTHORIZATION=f"Bearer {reader}"), 403, "forbidden")
    exporter = api_token_create(workspace=acme, name="exporter", scopes=["customers:read"]).secret
    assert api.get(f"{CUSTOMERS}/{ada.pk}/export", token=exporter).status_code == 200
    eraser = api_token_create(workspace=acme, name="eraser", scopes=["customers:write"]).secret
    assert api.delete(f"{CUSTOMERS}/{ada.pk}", HTTP_AUTHORIZATION=f"Bearer {eraser}").status_code == 204
    assert_api_error(api.get(f"{CUSTOMERS}/{ada.pk}/export", token=acme_token), 404, "unknown customer")


def test_export_shows_each_clicks_country_city_and_utm_fields(api, acme, acme_token, shop):
    click = ClickFactory(link=shop["link"], country="GB", utm_source="newsletter", utm_medium="email")
    lead = {"event": "lead", "click_id": click.click_id, "customer": {"email": EMAIL}}
    assert api.post("/api/v1/conversions", lead, token=acme_token).status_code == 201
    ada = Customer.objects.get(email=EMAIL)
    (shown,) = api.get(f"{CUSTOMERS}/{ada.pk}/export", token=acme_token).json()["clicks"]
    assert {k: shown[k] for k in ("country", "city", "utm_source", "utm_medium", "utm_campaign")} == {
        "country": "GB",
        "city": None,  # no city database here (GEOIP_PATH)
        "utm_source": "newsletter",
        "utm_medium": "email",
        "utm_campaign": None,
    }


def test_another_workspaces_customer_is_unknown(api, acme, globex, acme_token, globex_token, shop):
    ada = person_everywhere(api, acme_token, shop, acme)
    for resp in (
        api.get(f"{CUSTOMERS}/{ada.pk}/export", token=globex_token),
        api.delete(f"{CUSTOMERS}/{ada.pk}", HTTP_AUTHORIZATION=f"Bearer {globex_token.secret}"),
        api.delete(f"{CUSTOMERS}/ext_crm-ada", HTTP_AUTHORIZATION=f"Bearer {globex_token.secret}"),
    ):
        assert_api_error(resp, 404, "unknown customer")
    assert Customer.objects.get(pk=ada.pk).email == EMAIL
    for reference in ("0", "x", "ext_", "99999999999999999999"):
        assert_api_error(
            api.delete(f"{CUSTOMERS}/{reference}", HTTP_AUTHORIZATION=f"Bearer {acme_token.secret}"),
            404,
            "unknown customer",
        )
    assert_api_error(api.delete(f"{CUSTOMERS}/{ada.pk}"), 401, "unauthorized")


def test_the_cli_erases_and_exports(acme, capsys):
    from customers.services import customer_match

    ada = customer_match(workspace=acme, channel="api", email=EMAIL, name=NAME).customer
    call_command("customer", "export", "acme", str(ada.pk))
    assert json.loads(capsys.readouterr().out)["customer"]["email"] == EMAIL
    call_command("customer", "erase", "acme", str(ada.pk))
    assert json.loads(capsys.readouterr().out) == {
        "id": ada.pk,
        "erased": True,
        "erased_at": NOW.isoformat(timespec="microseconds").replace("+00:00", "Z"),
    }
    with pytest.raises(CommandError, match=f"unknown customer: {ada.pk}"):
        call_command("customer", "erase", "acme", str(ada.pk))
    with pytest.raises(CommandError, match="unknown workspace: nope"):
        call_command("customer", "export", "nope", "1")
    assert not traces(EMAIL, NAME)


def test_a_rate_limit_on_erasures(api, acme, acme_token, settings):
    settings.RATELIMIT_ERASURES_TOKEN = "1/m"
    assert_api_error(
        api.delete(f"{CUSTOMERS}/1", HTTP_AUTHORIZATION=f"Bearer {acme_token.secret}"), 404, "unknown customer"
    )
    resp = api.delete(f"{CUSTOMERS}/1", HTTP_AUTHORIZATION=f"Bearer {acme_token.secret}")
    assert_api_error(resp, 429, "rate_limited")
    assert int(resp["Retry-After"]) > 0


def test_export_of_a_contact_with_no_email(acme):
    from customers.services import customer_match

    only_id = customer_match(workspace=acme, channel="api", external_id="crm-7").customer
    exported = customer_export(customer=only_id)
    assert exported["customer"]["email"] is None and exported["suppressions"] == []
    customer_erase(customer=only_id)
    assert not Suppression.objects.exists()  # no address: nothing to suppress
    assert not traces("crm-7")
