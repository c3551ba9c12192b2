"""Post, link and campaign numbers equal a plain COUNT over the rows, before and after each roll-up."""

import json
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.db.models import Sum
from django.urls import reverse
from django.utils import timezone

from campaigns.models import CampaignLead
from clicks.models import Click
from conversions.models import ConversionEvent, Refund
from lftrack.currencies import amount_text
from rollups.models import CampaignNumberDelta, LinkTotals, Watermark
from rollups.selectors import money_of
from rollups.services import numbers_rebuild, numbers_roll_up
from tests.factories import (
    CampaignFactory,
    CampaignLeadFactory,
    ClickFactory,
    ConversionEventFactory,
    LinkFactory,
    PostFactory,
    RefundFactory,
)

pytestmark = pytest.mark.django_db


def counted(link_filter: dict) -> tuple:
    """The numbers the way plain queries over all rows give them: people's clicks, live-mode leads and sales,
    and each currency's sales, gross, refunded and net."""
    events = ConversionEvent.objects.filter(is_test=False, **link_filter)
    sales = events.filter(event="sale")
    refunds = Refund.objects.filter(is_test=False, **link_filter)
    revenue = []
    for currency in sorted(set(sales.values_list("currency", flat=True))):
        gross = sales.filter(currency=currency).aggregate(total=Sum("value_cents"))["total"] or 0
        refunded = refunds.filter(currency=currency).aggregate(total=Sum("amount_cents"))["total"] or 0
        revenue.append(
            {
                "currency": currency,
                "sales": sales.filter(currency=currency).count(),
                "gross_cents": gross,
                "refunded_cents": refunded,
                "net_cents": gross - refunded,
            }
        )
    return (
        Click.objects.filter(is_bot=False, **link_filter).count(),
        events.filter(event="lead").count(),
        sales.count(),
        revenue,
    )


def shown(row, group: str = "link") -> tuple:
    revenue = getattr(row, "revenue_shown", None)
    if revenue is None:
        revenue = money_of(group=group, **{f"{group}_ids": [row.pk]}).get(row.pk, [])
    return row.n_clicks, row.n_leads, row.n_sales, revenue


def shown_totals(link) -> tuple:
    rows = LinkTotals.objects.filter(link=link)
    return (
        sum(row.clicks for row in rows),
        sum(row.leads for row in rows),
        sum(row.sales for row in rows),
        {row.currency: (row.revenue_cents, row.refunded_cents) for row in rows if row.currency},
    )


def activity(link, campaign, n: int) -> None:
    """n clicks on `link` (and a bot's), a lead on each (and a test-mode one), a sale on every other one, in
    three currencies, backdated by a day more each time, each refunded in part (and a test-mode sale), and a
    campaign lead per click."""
    for i in range(n):
        click = ClickFactory(link=link)
        ClickFactory(link=link, is_bot=True)
        ConversionEventFactory(click=click, event="lead")
        ConversionEventFactory(click=click, event="lead", is_test=True)
        if i % 2:
            sale = ConversionEventFactory(
                click=click,
                event="sale",
                value_cents=1000 + i,
                currency=("EUR", "JPY", "USD")[i % 3],
                occurred_at=timezone.now() - timedelta(days=i),
            )
            RefundFactory(conversion=sale, amount_cents=100 + i)
            RefundFactory(conversion=ConversionEventFactory(click=click, event="sale", value_cents=777, is_test=True))
        CampaignLeadFactory(enrollment__campaign=campaign)


def assert_pages_match_counts(client, acme_posts, campaign) -> None:
    rows = {row.pk: row for row in client.get(reverse("admin:clicks_post_changelist")).context["cl"].result_list}
    assert set(rows) == {post.pk for post in acme_posts}  # globex's post stays invisible
    for post in acme_posts:
        assert shown(rows[post.pk]) == counted({"link__post": post})
        page = client.get(reverse("admin:clicks_post_change", args=[post.pk]))
        assert shown(page.context["original"], "post") == counted({"link__post": post})
        for entry in counted({"link__post": post})[3]:
            assert amount_text(entry["net_cents"], entry["currency"]) in page.content.decode()
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
    assert shown_totals(busy)[0] == 3
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
    assert shown_totals(theirs) == (2, 2, 1, {"JPY": (1001, 101)})  # rolled up, never shown to bob


def test_totals_match_counts_per_link(acme):
    campaign = CampaignFactory(workspace=acme)
    link = LinkFactory(post__workspace=acme)
    activity(link, campaign, 4)
    numbers_roll_up()
    activity(link, campaign, 1)
    numbers_roll_up()
    clicks, leads, sales, revenue = counted({"link": link})
    assert shown_totals(link) == (
        clicks,
        leads,
        sales,
        {entry["currency"]: (entry["gross_cents"], entry["refunded_cents"]) for entry in revenue},
    )
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
        "conversions_refund": Refund.objects.latest("pk").pk,
        "campaigns_campaignlead": CampaignLead.objects.latest("pk").pk,
        "rollups_campaignnumberdelta": newest_delta,
    }
    assert not CampaignNumberDelta.objects.exists()
    Click.objects.filter(is_bot=False).latest("pk").delete()  # by hand, with its events: totals are now too many
    assert shown_totals(link) == (2, 2, 1, {"JPY": (1001, 101)})
    numbers_rebuild()
    assert (shown_totals(link), campaign.totals.leads) == ((1, 1, 0, {}), 2)
    assert Watermark.objects.count() == 5


def test_command_refuses_a_silly_wait(acme):
    with pytest.raises(Exception, match="--wait must be between 0 and 600 seconds"):
        call_command("roll_up_numbers", "--wait", "-1")
