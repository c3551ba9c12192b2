"""Two senders taking the same step's first batch at once make one tracked link per destination, shared by both."""

import pytest

from campaigns.models import EmailLink
from campaigns.services import campaign_email_add
from campaigns.tracking import email_links_ensure
from clicks.models import Link, Post
from tests.conftest import run_in_threads
from tests.factories import CampaignFactory

pytestmark = pytest.mark.django_db(transaction=True)


def test_two_senders_make_one_link_per_destination(acme):
    campaign = CampaignFactory(workspace=acme, slug="race", name="Race")
    markdown = "\n\n".join(f"[link {n}](https://shop.example/{n})" for n in range(5))
    step = campaign_email_add(campaign=campaign, subject="Hi", markdown=markdown, delay_minutes=0)

    results = run_in_threads(4, lambda _: email_links_ensure(step))
    assert all(isinstance(result, dict) for result in results), results
    assert all(result == results[0] for result in results)
    assert set(results[0]) == {f"https://shop.example/{n}" for n in range(5)}
    assert EmailLink.objects.count() == Link.objects.count() == 5
    assert list(Post.objects.values_list("title", flat=True)) == ["Email: Race #1"]
