"""Post, link and campaign numbers equal a plain COUNT over the rows, before and after each roll-up."""
import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.db.models import Sum
from django.urls import reverse

from campaigns.models import CampaignLead
from clicks.models import Click
from conversions.models import ConversionEvent
from rollups.models import CampaignNumberDelta, LinkTotals, Watermark
from rollups.services import numbers_rebuild, numbers_roll_up
from tests.factories import (
    CampaignFactory,
    CampaignLeadFactory,
    ClickFactory,
    ConversionEventFactory,
    LinkFactory,
    PostFactory,
)

pytestmark = pytest.mark.django_db


def counted(link_filter: dict) -> tuple:
    """The numbers the way a plain query over all rows gives them."""
    events = ConversionEvent.objects.filter(**link_filter)
    return (
        Click.objects.filter(**link_filter).count(),
        events.filter(event="lead").count(),
        events.filter(event="sale").count(),
        events.filter(event="sale").aggregate(total=Sum("value_cents"))["total"] or 0,
    )


def shown(row) -> tuple:
    return row.n_clicks, row.n_leads, row.n_sales, row.n_revenue_cents


def shown_totals(totals) -> tuple:
    return totals.clicks, totals.leads, totals.sales, totals.revenue_cents


def activity(link, campaign, n: int) -> None:
    """n clicks on `link`, a lead on each, a sale on every other one, and a campaign lead per click."""
    for i in range(n):
        click = ClickFactory(link=link)
        ConversionEventFactory(click=click, event="lead")
        if i % 2:
            ConversionEventFactory(click=click, event="sale", value_cents=1000 + i)
        CampaignLeadFactory(enrollment__campaign=campaign)


def assert_pages_match_counts(client, acme_posts, campaign) -> None:
    rows = {row.pk: row for row in client.get(reverse("admin:clicks_post_changelist")).context["cl"].result_list}
    assert set(rows) == {post.pk for post in acme_posts}  # globex's post stays invisible
    for post in acme_posts:
        assert shown(rows[post.pk]) == counted({"link__post": post})
        page = client.get(reverse("admin:clicks_post_change", args=[post.pk]))
        assert shown(page.context["original"]) == counted({"link__post": post})
        for form in page.context["inline_admin_formsets"][0]:
            assert shown(form.original) == counted({"link": form.original})
    links = client.get(reverse("admin:clicks_link_changelist")).context["cl"].result_list
    assert len(links) == 3 and all(shown(link) == counted({"link": link}) for link in links)
    (listed,) = client.get(reverse("admin:campaigns_campaign_changelist")).context["cl"].result_list
    page = client.get(reverse("admin:campaigns_campaign_change", args=[campaign.pk])).context["original"]
    assert listed.n_leads == page.n_leads == CampaignLead.objects.filter(campaign=campaign).count()


def test_numbers_are_exact_before_between_and_after_roll_ups(as_bob, acme, globex):
    campaign = CampaignFactory(workspace=acme)
    launch, quiet = PostFactory(workspace=acme, campaign=campaign), PostFactory(workspace=acme)
    busy, other, lonely = LinkFactory(post=launch), LinkFactory(post=launch), LinkFactory(post=quiet)
    theirs = LinkFactory(post__workspace=globex)
    their_campaign = CampaignFactory(workspace=globex)
    activity(busy, campaign, 3)
    activity(theirs, their_campaign, 2)
    assert_pages_match_counts(as_bob, [launch, quiet], campaign)  # nothing rolled up yet: all tail

    numbers_roll_up()
    assert LinkTotals.objects.get(link=busy).clicks == 3
    assert_pages_match_counts(as_bob, [launch, quiet], campaign)  # all in the totals

    activity(busy, campaign, 2)  # rows arriving between roll-ups, on links with and without totals
    activity(other, campaign, 1)
    activity(lonely, campaign, 3)
    assert_pages_match_counts(as_bob, [launch, quiet], campaign)  # totals plus the tail

    numbers_roll_up()
    activity(other, campaign, 1)
    assert_pages_match_counts(as_bob, [launch, quiet], campaign)
    numbers_roll_up()
    assert_pages_match_counts(as_bob, [launch, quiet], campaign)
    assert shown_totals(LinkTotals.objects.get(link=theirs)) == (2, 2, 1, 1001)  # rolled up, never shown to bob


def test_totals_match_counts_per_link(acme):
    campaign = CampaignFactory(workspace=acme)
    link = LinkFactory(post__workspace=acme)
    activity(link, campaign, 4)
    numbers_roll_up()
    activity(link, campaign, 1)
    numbers_roll_up()
    assert shown_totals(LinkTotals.objects.get(link=link)) == counted({"link": link})
    assert campaign.totals.leads == 5


def test_command_prints_each_tables_watermark_and_rebuild_recounts(acme):
    campaign = CampaignFactory(workspace=acme)
    link = LinkFactory(post__workspace=acme)
    activity(link, campaign, 2)
    newest_delta = CampaignNumberDelta.objects.latest("pk").pk  # the log's rows go once rolled up
    out = StringIO()
    call_command("roll_up_numbers", stdout=out)
    assert json.loads(out.getvalue()) == {
        "clicks_click": Click.objects.latest("pk").pk,
        "conversions_conversionevent": ConversionEvent.objects.latest("pk").pk,
        "campaigns_campaignlead": CampaignLead.objects.latest("pk").pk,
        "rollups_campaignnumberdelta": newest_delta,
    }
    assert not CampaignNumberDelta.objects.exists()
    Click.objects.filter(pk=Click.objects.latest("pk").pk).delete()  # by hand: totals are now one too many
    assert LinkTotals.objects.get(link=link).clicks == 2
    numbers_rebuild()
    assert (LinkTotals.objects.get(link=link).clicks, campaign.totals.leads) == (1, 2)
    assert Watermark.objects.count() == 4


def test_command_refuses_a_silly_wait(acme):
    with pytest.raises(Exception, match="--wait must be between 0 and 600 seconds"):
        call_command("roll_up_numbers", "--wait", "-1")
