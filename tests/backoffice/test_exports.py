"""CSV exports of contacts, conversions and a campaign's recipients: the rows under the list's filters, streamed."""

import csv
import io
import tracemalloc

import pytest
from django.http import StreamingHttpResponse
from django.urls import reverse

from customers.models import Customer
from tests.factories import (
    CampaignFactory,
    ConversionEventFactory,
    CustomerFactory,
    EnrollmentFactory,
    SuppressionFactory,
)

pytestmark = pytest.mark.django_db

CONTACTS = reverse("admin:customers_customer_export")
CONVERSIONS = reverse("admin:conversions_conversionevent_export")
RECIPIENTS = reverse("admin:campaigns_enrollment_export")


def table(response) -> list[dict]:
    assert response.status_code == 200, response
    assert isinstance(response, StreamingHttpResponse)
    assert response["Content-Type"] == "text/csv"
    assert response["Content-Disposition"].startswith('attachment; filename="')
    text = b"".join(response.streaming_content).decode()
    assert text.startswith("\ufeff")
    return list(csv.DictReader(io.StringIO(text[1:])))


def test_contacts_under_the_lists_filter_and_search(as_bob, acme, globex):
    CustomerFactory(workspace=acme, email="ada@example.com", name="Ada", source="pixel", external_id="crm-1")
    CustomerFactory(workspace=acme, email="alan@example.com", name="Alan", source="pixel")
    CustomerFactory(workspace=acme, email="grace@example.com", name="Grace", source="api")
    CustomerFactory(workspace=globex, email="ada@globex.test", name="Ada", source="pixel")
    SuppressionFactory(workspace=acme, email="ada@example.com")

    rows = table(as_bob.get(CONTACTS, {"source__exact": "pixel", "q": "ada"}))
    assert [(r["email"], r["name"], r["external_id"], r["came in by"], r["suppressed"]) for r in rows] == [
        ("ada@example.com", "Ada", "crm-1", "Pixel", "yes")
    ]
    assert len(rows[0]["created (UTC)"]) == 19  # 2026-03-01 12:30:00
    everyone = table(as_bob.get(CONTACTS))
    assert {r["email"] for r in everyone} == {"ada@example.com", "alan@example.com", "grace@example.com"}


def test_the_list_page_offers_the_export_of_what_it_shows(as_bob, acme):
    page = as_bob.get(reverse("admin:customers_customer_changelist"), {"source__exact": "pixel"}).content.decode()
    assert f'href="{CONTACTS}?source__exact=pixel" id="export-csv"' in page


def test_conversions_filtered_by_event(as_bob, acme, globex):
    ConversionEventFactory(
        click__link__post__workspace=acme,
        click__link__post__title="Spring",
        event="sale",
        value_cents=49000,
        event_name="Annual plan",
        customer=CustomerFactory(workspace=acme, email="ada@example.com"),
    )
    ConversionEventFactory(click__link__post__workspace=acme, event="lead")
    ConversionEventFactory(click__link__post__workspace=globex, event="sale", value_cents=100)
    rows = table(as_bob.get(CONVERSIONS, {"event__exact": "sale"}))
    assert len(rows) == 1
    row = rows[0]
    assert (row["event"], row["value"], row["event name"], row["contact email"], row["post"]) == (
        "sale",
        "490.00",
        "Annual plan",
        "ada@example.com",
        "Spring",
    )
    assert row["link"].startswith("http") and "/l/" in row["link"]


def test_recipients_of_one_campaign_in_one_state(as_bob, acme):
    spring, autumn = CampaignFactory(workspace=acme, name="Spring"), CampaignFactory(workspace=acme, name="Autumn")
    EnrollmentFactory(campaign=spring, customer__email="ada@example.com", state="active")
    EnrollmentFactory(campaign=spring, customer__email="bea@example.com", state="stopped")
    EnrollmentFactory(campaign=autumn, customer__email="cy@example.com", state="active")
    rows = table(as_bob.get(RECIPIENTS, {"campaign__id__exact": spring.pk, "state__exact": "active"}))
    assert [(r["email"], r["campaign"], r["state"]) for r in rows] == [("ada@example.com", "Spring", "Active")]


def test_another_workspaces_rows_never_leave(as_charlie, acme_world, globex_world):
    for url in (CONTACTS, CONVERSIONS, RECIPIENTS):
        rows = table(as_charlie.get(url, {"workspace": acme_world.workspace.pk}))
        assert rows == []
        text = str(table(as_charlie.get(url)))
        assert "acme" not in text and "globex" in text


def test_a_formula_in_a_name_stays_text(as_bob, acme):
    CustomerFactory(workspace=acme, email="x@example.com", name='=HYPERLINK("http://evil.example","click")')
    (row,) = table(as_bob.get(CONTACTS))
    assert row["name"] == '\'=HYPERLINK("http://evil.example","click")'


def test_an_unknown_filter_goes_back_to_the_list(as_bob, acme):
    response = as_bob.get(CONTACTS, {"nonsense__exact": "1"})
    assert response.status_code == 302 and response["Location"].endswith("?e=1")


def test_people_without_a_role_get_nothing(client, acme_world):
    from tests.backoffice.conftest import client_for
    from tests.factories import UserFactory

    assert client_for(UserFactory(username="stranger")).get(CONTACTS).status_code == 403
    assert client.get(CONTACTS).status_code == 302  # to the login page


def _peak_while_streaming(client, url: str) -> tuple[int, int]:
    response = client.get(url)
    tracemalloc.start()
    lines = sum(chunk.count(b"\n") for chunk in response.streaming_content)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return lines, peak


def test_memory_stays_flat_whatever_the_number_of_rows(as_bob, acme, monkeypatch, django_assert_max_num_queries):
    """Four times the rows, the same memory: the rows go out chunk by chunk, never held all at once."""
    monkeypatch.setattr("backoffice.exports.CHUNK", 100)

    def add(start: int, count: int) -> None:
        Customer.objects.bulk_create(
            Customer(workspace=acme, email=f"p{i}@example.com", name=f"Person {i} " * 5, source="api")
            for i in range(start, start + count)
        )

    add(0, 800)
    small_lines, small_peak = _peak_while_streaming(as_bob, CONTACTS)
    add(800, 2400)
    big_lines, big_peak = _peak_while_streaming(as_bob, CONTACTS)
    assert (small_lines, big_lines) == (801, 3201)  # the header and every row
    assert big_peak < small_peak * 2, (small_peak, big_peak)  # rows held until the end would make it 4x
    # A query per chunk, not per row, and none for the page the list would show (its count, rows, revenue).
    with django_assert_max_num_queries(3200 // 100 + 6):
        b"".join(as_bob.get(CONTACTS).streaming_content)
