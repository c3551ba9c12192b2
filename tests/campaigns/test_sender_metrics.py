"""The sender's emails by outcome on /metrics (campaigns/sending.py; docs/metrics.md)."""

import pytest

from campaigns.sending import run_pass
from campaigns.services import campaign_lead_add
from tests.factories import CampaignEmailFactory, CampaignFactory, SuppressionFactory
from tests.scrape import TOKEN, moved, scrape

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _token(settings):
    settings.METRICS_TOKEN = TOKEN


def test_a_pass_counts_sent_deferred_skipped_failed_and_bounced(acme, clock, settings, client):
    settings.EMAIL_BACKEND = "tests.campaigns.mailbackends.PickyBackend"
    campaign = CampaignFactory(workspace=acme, slug="spring")
    CampaignEmailFactory(campaign=campaign, position=1, delay_minutes=0)
    for name in ("ada", "bea", "gone", "later", "sup"):
        campaign_lead_add(campaign=campaign, email=f"{name}@example.com")
    SuppressionFactory(workspace=acme, email="sup@example.com")  # straight to the table: found at send time
    before = scrape(client)
    result = run_pass()
    after = scrape(client)
    assert (result.sent, result.deferred, result.skipped, result.failed) == (2, 1, 1, 1)
    emails = {
        outcome: moved(before, after, "lftrack_emails_total", outcome=outcome)
        for outcome in ("sent", "deferred", "skipped", "failed", "bounced", "test")
    }
    assert emails == {"sent": 2, "deferred": 1, "skipped": 1, "failed": 1, "bounced": 1, "test": 0}


def test_a_test_contacts_step_counts_as_test(acme, clock, client):
    campaign = CampaignFactory(workspace=acme, slug="spring")
    CampaignEmailFactory(campaign=campaign, position=1, delay_minutes=0)
    campaign_lead_add(campaign=campaign, email="probe@example.com", test=True)
    before = scrape(client)
    assert run_pass().test == 1
    assert moved(before, scrape(client), "lftrack_emails_total", outcome="test") == 1
