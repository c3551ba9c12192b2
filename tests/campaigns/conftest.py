"""Campaign fixtures: acme's `spring` campaign with one live email, globex's own, a frozen clock."""

from datetime import UTC, datetime

import pytest
from django.core.cache import cache

from tests.factories import CampaignEmailFactory, CampaignFactory

# A Monday morning, on a whole second.
NOW = datetime(2026, 3, 2, 9, 0, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _fresh_rate_limits():
    # Counters live in the cache (Redis when REDIS_URL is set) and token ids repeat between tests.
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def clock(time_machine):
    time_machine.move_to(NOW, tick=False)
    return time_machine


@pytest.fixture
def campaign(acme):
    campaign = CampaignFactory(workspace=acme, slug="spring", name="Spring launch")
    CampaignEmailFactory(campaign=campaign, position=1, delay_minutes=60, active=True)
    return campaign


@pytest.fixture
def globex_campaign(globex):
    return CampaignFactory(workspace=globex, slug="globex-only")
