"""Contacts: search, source and suppression filters, the contact page, and adding a contact by hand."""

from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse

from clicks.models import Click
from customers.models import Customer, CustomerActivity
from customers.services import customer_match
from tests.factories import (
    CampaignEmailFactory,
    CampaignFactory,
    ClickFactory,
    ConversionEventFactory,
    CustomerFactory,
    EmailSendFactory,
    EnrollmentFactory,
    LinkFactory,
    SuppressionFactory,
)

pytestmark = pytest.mark.django_db

LIST = reverse("admin:customers_customer_changelist")
ADD = reverse("admin:customers_customer_add")


def page_of(client, customer) -> str:
    response = client.get(reverse("admin:customers_customer_change", args=[customer.pk]))
    assert response.status_code == 200
    return response.content.decode()


def listed(client, **params) -> set[str]:
    response = client.get(LIST, params)
    assert response.status_code == 200
    return {c.email for c in response.context["cl"].result_list}


@pytest.fixture
def people(acme, globex):
    return {
        "ada": CustomerFactory(workspace=acme, email="Ada@Lovelace.test", name="Ada Lovelace", external_id="crm-1"),
        "grace": CustomerFactory(workspace=acme, email="grace@hopper.test", name="Grace Hopper", source="pixel"),
        "alan": CustomerFactory(
            workspace=acme, email="alan@turing.test", name="Alan", source="manual", external_id="crm-9"
        ),
        "gina": CustomerFactory(workspace=globex, email="ada@globex.test", name="Ada Globex", external_id="crm-1"),
    }


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("lovelace", {"Ada@Lovelace.test"}),
        ("hopper", {"grace@hopper.test"}),
        ("crm-9", {"alan@turing.test"}),
        ("ADA", {"Ada@Lovelace.test"}),
        ("crm-1", {"Ada@Lovelace.test"}),
        ("nobody", set()),
    ],
)
def test_search_by_email_name_and_external_id(as_bob, people, query, expected):
    assert listed(as_bob, q=query) == expected


def test_filter_by_how_they_came_in(as_bob, people):
    assert listed(as_bob, source__exact="pixel") == {"grace@hopper.test"}
    assert listed(as_bob, source__exact="manual") == {"alan@turing.test"}
    assert listed(as_bob, source__exact="api") == {"Ada@Lovelace.test"}
    page = as_bob.get(LIST).content.decode()
    assert "<summary>How they came in</summary>" in page
    for label in ("API", "Pixel", "Manual"):
        assert f">{label}</a>" in page


def test_filter_by_suppression_matches_lowercased_email_within_the_workspace(as_bob, people, acme, globex):
    SuppressionFactory(workspace=acme, email="ada@lovelace.test")
    SuppressionFactory(workspace=globex, email="grace@hopper.test")  # another workspace's list: no effect here
    assert listed(as_bob, suppressed="yes") == {"Ada@Lovelace.test"}
    assert listed(as_bob, suppressed="no") == {"grace@hopper.test", "alan@turing.test"}


def test_the_suppressed_column_says_so_in_words(as_bob, people, acme):
    SuppressionFactory(workspace=acme, email="ada@lovelace.test")
    page = as_bob.get(LIST).content.decode()
    assert '<td class="field-is_suppressed">Suppressed</td>' in page
    assert page.count('<td class="field-is_suppressed">-</td>') == 2
    assert "icon-yes.svg" not in page and "icon-no.svg" not in page  # no green tick on a suppressed contact


@pytest.fixture
def moved(acme):
    """A holds external_id crm-7; B arrives with its own email and the same id, which moves to B."""
    a = customer_match(workspace=acme, channel="api", email="a@example.com", external_id="crm-7", name="First").customer
    b = customer_match(
        workspace=acme, channel="api", email="b@example.com", external_id="crm-7", name="Second"
    ).customer
    return a, b


def test_contact_page_shows_identity_conversions_enrollments_and_timeline(as_bob, acme, moved):
    a, b = moved
    link = LinkFactory(post__workspace=acme, post__title="Black Friday post", destination="https://acme.test/bf")
    ConversionEventFactory(
        click__link=link,
        customer=b,
        event="sale",
        value_cents=49000,
        event_name="Annual plan",
        occurred_at=datetime(2026, 3, 1, 12, 30, tzinfo=UTC),
    )
    ConversionEventFactory(click__link=link, customer=b, event="lead", event_name="Signed up")
    campaign = CampaignFactory(workspace=acme, name="Onboarding")
    EnrollmentFactory(campaign=campaign, customer=b, next_send_at=datetime(2026, 3, 2, 9, 0, tzinfo=UTC))
    SuppressionFactory(workspace=acme, email="b@example.com", reason="bounced")

    page = page_of(as_bob, b)
    for text in (
        "b@example.com",
        "Second",
        "crm-7",
        "API",  # identity and how they came in
        "Sale",
        f"/l/{link.key}",
        "Black Friday post",
        "490.00",
        "Annual plan",
        "2026-03-01 12:30",
        "Lead",
        "Signed up",  # conversions
        "Onboarding",
        "Active",
        "2026-03-02 09:00",  # enrollments
        "External id “crm-7” moved in from",
        "a@example.com",
        "Suppressed: bounced",
        "bounced since",
    ):
        assert text in page, text
    page_a = page_of(as_bob, a)
    assert "External id “crm-7” moved out to" in page_a and "b@example.com" in page_a
    assert "Created with external id “crm-7”" in page_a


def test_contact_page_shows_first_touch_clicks_emails_and_one_timeline(as_bob, acme, moved):
    _, b = moved
    march = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    link = LinkFactory(
        post__workspace=acme,
        post__title="Spring post",
        destination="https://acme.test/p?utm_source=newsletter&utm_medium=email&utm_campaign=spring&x=1",
    )
    first = ClickFactory(
        link=link,
        referrer="https://news.example.org/issue/12",
        referrer_domain="news.example.org",
        device="mobile",
        browser="Mobile Safari",
        os="iOS",
    )
    Click.objects.filter(pk=first.pk).update(created_at=march)
    ConversionEventFactory(click=first, customer=b, event="lead", occurred_at=march + timedelta(minutes=5))
    later = ClickFactory(link=LinkFactory(post__workspace=acme, post__title="Autumn post"), referrer_domain="t.co")
    ConversionEventFactory(click=later, customer=b, event="sale", value_cents=1500)
    ClickFactory(link=link)  # somebody else's click: not this contact's
    campaign = CampaignFactory(workspace=acme, name="Onboarding")
    enrollment = EnrollmentFactory(
        campaign=campaign,
        customer=b,
        enrolled_at=march + timedelta(minutes=6),
        state="stopped",
        stopped_at=march + timedelta(days=2),
    )
    step = CampaignEmailFactory(campaign=campaign, position=1, subject="Welcome, {{ name }}")
    EmailSendFactory(
        enrollment=enrollment,
        campaign_email=step,
        sent_at=march + timedelta(days=1),
        complained_at=march + timedelta(days=1, hours=2),
    )
    EmailSendFactory(
        enrollment=enrollment,
        campaign_email=None,
        position=2,
        status="failed",
        sent_at=march + timedelta(days=1, hours=3),
        error="550 mailbox unavailable",
    )

    page = page_of(as_bob, b)
    first_touch = page.split('id="contact-first-touch"')[1].split('id="contact-timeline"')[0]
    for text in (
        "2026-03-01 12:00",
        f"/l/{link.key}",
        "Spring post",
        "https://news.example.org/issue/12",
        "mobile",
        "Mobile Safari",
        "newsletter",
        "email",
        "spring",
    ):
        assert text in first_touch, text
    assert "Autumn post" not in first_touch
    clicks = page.split('id="contact-clicks"')[1].split('id="contact-emails"')[0]
    assert clicks.count("<tr>") == 3  # the header and this contact's two clicks
    assert "news.example.org" in clicks and "t.co" in clicks
    emails = page.split('id="contact-emails"')[1].split('id="contact-enrollments"')[0]
    for text in (
        "#1 Welcome, Second",
        "Sent, marked as spam 2026-03-02 14:00",
        "#2 (step removed)",
        "Failed",
        "550 mailbox unavailable",
        "Onboarding",
    ):
        assert text in emails, text
    timeline = page.split('id="contact-timeline"')[1].split('id="contact-conversions"')[0]
    order = [
        "External id “crm-7” moved in from",
        "Stopped in",
        "Email failed:",
        "Marked #1 Welcome, Second as spam",
        "Emailed #1 Welcome, Second",
        "Enrolled in",
        "Lead",
    ]
    positions = [timeline.index(text) for text in order]
    assert positions == sorted(positions), "newest first"
    assert "Sale 15.00" in timeline and timeline.count("Clicked") == 2
    assert "Clicked" in timeline.split("<tr")[-1]  # the first click is the oldest entry


def test_contact_page_of_a_person_without_email(as_bob, acme):
    ghost = customer_match(workspace=acme, channel="api", external_id="only-id").customer
    page = page_of(as_bob, ghost)
    assert "only-id" in page and "No conversions yet." in page and "Not enrolled in any campaign." in page
    assert "no email" in as_bob.get(LIST).content.decode()


def test_contact_page_is_read_only(as_alice, acme, moved):
    a, _ = moved
    page = page_of(as_alice, a)
    assert 'name="email"' not in page and 'name="_save"' not in page
    as_alice.post(reverse("admin:customers_customer_change", args=[a.pk]), {"email": "hijack@example.com"})
    a.refresh_from_db()
    assert a.email == "a@example.com"


def test_editor_adds_a_contact_by_hand_through_the_matching_service(as_bob, acme):
    response = as_bob.post(
        ADD, {"workspace": acme.pk, "email": "New@Person.test", "name": "New Person", "external_id": "crm-42"}
    )
    contact = Customer.objects.get(workspace=acme, email="New@Person.test")
    assert response.status_code == 302
    assert response.url == reverse("admin:customers_customer_change", args=[contact.pk])
    assert (contact.name, contact.external_id, contact.source) == ("New Person", "crm-42", "manual")
    assert CustomerActivity.objects.filter(customer=contact, kind="created", channel="manual").exists()
    assert "Manual" in page_of(as_bob, contact)


def test_adding_a_known_email_reuses_the_contact_and_moves_the_external_id(as_bob, acme, moved):
    a, b = moved
    response = as_bob.post(
        ADD, {"workspace": acme.pk, "email": "A@EXAMPLE.com", "name": "Other name", "external_id": "crm-7"}
    )
    assert response.status_code == 302
    assert Customer.objects.filter(workspace=acme).count() == 2
    a.refresh_from_db()
    b.refresh_from_db()
    assert (a.name, a.external_id, a.source, b.external_id) == ("First", "crm-7", "api", "")
    assert CustomerActivity.objects.filter(customer=a, kind="external_id_moved_in", channel="manual").exists()
    assert "already a contact" in as_bob.get(response.url).content.decode()


@pytest.mark.parametrize(
    ("data", "error"),
    [
        ({"email": "", "external_id": ""}, "customer needs email or external_id"),
        ({"email": "not-an-email"}, "Enter a valid email address."),
        ({"email": "x@example.com", "name": "n" * 201}, "Ensure this value has at most 200 characters"),
        ({"email": "x@example.com", "external_id": "e" * 256}, "Ensure this value has at most 255 characters"),
    ],
)
def test_bad_input_on_the_add_form_changes_nothing(as_bob, acme, data, error):
    response = as_bob.post(ADD, {"workspace": acme.pk, **data})
    assert response.status_code == 200
    assert error in response.content.decode()
    assert not Customer.objects.exists()


def test_a_contact_cannot_be_added_to_another_workspace(as_bob, acme, globex):
    response = as_bob.post(ADD, {"workspace": globex.pk, "email": "x@example.com"})
    assert response.status_code == 200 and "Select a valid choice" in response.content.decode()
    assert not Customer.objects.exists()


def test_contact_page_links_to_all_conversions_when_there_are_many(as_bob, acme, moved, monkeypatch):
    _, b = moved
    monkeypatch.setattr("backoffice.contact_page.PAGE_ROWS", 2)
    link = LinkFactory(post__workspace=acme)
    for _ in range(3):
        ConversionEventFactory(click__link=link, customer=b)
    page = page_of(as_bob, b)
    url = reverse("admin:conversions_conversionevent_changelist") + f"?customer__id__exact={b.pk}"
    assert url in page
    assert len(as_bob.get(url).context["cl"].result_list) == 3


def test_owners_enroll_selected_contacts_in_a_campaign(as_alice, people, acme, globex):
    from campaigns.models import Enrollment
    from tests.factories import CampaignEmailFactory, CampaignFactory

    spring = CampaignFactory(workspace=acme, name="Spring")
    CampaignEmailFactory(campaign=spring, position=1)
    SuppressionFactory(workspace=acme, email="alan@turing.test")
    chosen = [people["ada"].pk, people["grace"].pk, people["alan"].pk, people["gina"].pk]  # gina: another workspace
    asked = as_alice.post(LIST, {"action": "enroll_contacts", "_selected_action": chosen})
    assert asked.status_code == 302 and "/enroll/?ids=" in asked["Location"]
    page = as_alice.get(asked["Location"])
    assert page.status_code == 200 and "Spring" in page.content.decode()
    ids = asked["Location"].split("ids=")[1]
    done = as_alice.post(reverse("admin:customers_customer_enroll"), {"ids": ids, "campaign": spring.pk}, follow=True)
    assert "Enrolled in Spring: 2 reused, 1 suppressed." in done.content.decode()
    enrolled = set(Enrollment.objects.filter(campaign=spring).values_list("customer__email", flat=True))
    assert enrolled == {"Ada@Lovelace.test", "grace@hopper.test"}


def test_editors_cannot_enroll_contacts(as_bob, people, acme):
    from tests.factories import CampaignFactory

    spring = CampaignFactory(workspace=acme)
    assert b"enroll_contacts" not in as_bob.get(LIST).content
    assert (
        as_bob.post(
            reverse("admin:customers_customer_enroll"), {"ids": str(people["ada"].pk), "campaign": spring.pk}
        ).status_code
        == 403
    )
