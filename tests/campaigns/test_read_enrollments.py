"""GET /api/v1/campaigns/<slug>/enrollments: a campaign's recipients newest first, by state, a page at a time."""

from datetime import timedelta

import pytest
from django.utils import timezone

from tests.conftest import assert_api_error
from tests.factories import CampaignFactory, CustomerFactory, EnrollmentFactory
from workspaces.tokens import api_token_create

pytestmark = pytest.mark.django_db
URL = "/api/v1/campaigns/spring/enrollments"


@pytest.fixture
def recipients(acme, globex):
    spring = CampaignFactory(workspace=acme, slug="spring")
    now = timezone.now()
    ada = EnrollmentFactory(
        campaign=spring,
        customer=CustomerFactory(workspace=acme, email="ada@example.com", external_id="user_42"),
        enrolled_at=now - timedelta(days=2),
        last_sent_position=1,
        last_sent_at=now - timedelta(days=1),
        next_send_at=now + timedelta(days=1),
    )
    bob = EnrollmentFactory(campaign=spring, enrolled_at=now - timedelta(days=1), state="stopped", stopped_at=now)
    cy = EnrollmentFactory(campaign=spring, enrolled_at=now)
    EnrollmentFactory(campaign=CampaignFactory(workspace=globex, slug="spring"))
    return ada, bob, cy


def test_newest_first_with_what_went_last_and_what_goes_next(api, acme_token, recipients):
    ada, bob, cy = recipients
    body = api.get(URL, token=acme_token).json()
    assert [r["id"] for r in body["data"]] == [cy.pk, bob.pk, ada.pk] and body["next"] is None
    first = body["data"][2]
    assert first["contact"] == {
        "id": ada.customer_id,
        "email": "ada@example.com",
        "name": first["contact"]["name"],
        "external_id": "user_42",
    }
    assert (first["state"], first["last_sent_position"]) == ("active", 1)
    assert first["last_sent_at"] and first["next_send_at"] and first["enrolled_at"]


def test_by_state_and_by_page(api, acme_token, recipients):
    ada, bob, cy = recipients
    assert [r["id"] for r in api.get(URL, {"state": "stopped"}, token=acme_token).json()["data"]] == [bob.pk]
    first = api.get(URL, {"limit": 2}, token=acme_token).json()
    second = api.get(URL, {"limit": 2, "cursor": first["next"]}, token=acme_token).json()
    assert [r["id"] for r in first["data"] + second["data"]] == [cy.pk, bob.pk, ada.pk] and second["next"] is None


def test_errors(api, acme, acme_token, globex_token, recipients):
    assert_api_error(api.get(URL, {"state": "gone"}, token=acme_token), 422, "invalid state")
    assert_api_error(api.get("/api/v1/campaigns/nope/enrollments", token=acme_token), 404, "unknown campaign")
    globex_only = api.get(URL, token=globex_token).json()["data"]
    assert len(globex_only) == 1 and globex_only[0]["id"] not in {e.pk for e in recipients}
    writer = api_token_create(workspace=acme, name="w", scopes=["leads:write"]).secret
    assert_api_error(api.get(URL, token=writer), 403, "forbidden")
