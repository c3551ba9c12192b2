"""Every admin list (and the pages with lists in them) runs a bounded number of queries, whatever the rows."""

import pytest
from django.urls import reverse
from django.utils import timezone

from campaigns.broadcasts import broadcast_save
from campaigns.models import BroadcastLink, BroadcastRecipient
from campaigns.segments import segment_save
from tests.factories import (
    ApiTokenFactory,
    CampaignEmailFactory,
    CampaignFactory,
    CampaignLeadFactory,
    ClickFactory,
    ConversionEventFactory,
    CustomerActivityFactory,
    CustomerFactory,
    EmailSendFactory,
    EnrollmentFactory,
    LinkFactory,
    MembershipFactory,
    PostFactory,
    SuppressionFactory,
)

pytestmark = pytest.mark.django_db

CHANGELISTS = [
    "workspaces_workspace",
    "workspaces_membership",
    "workspaces_apitoken",
    "customers_customer",
    "conversions_conversionevent",
    "clicks_post",
    "clicks_link",
    "campaigns_campaign",
    "campaigns_enrollment",
    "campaigns_suppression",
    "campaigns_emailsend",
]
# Session, user, memberships, count, rows, the scoped filter choices, and the page's revenue per currency
# (posts and links): the worst list needs this many.
MAX_QUERIES = 10


def populate(workspace, n: int) -> dict:
    """n rows of every kind in `workspace`, each with its own related rows (so select_related matters)."""
    contact = None
    post = PostFactory(workspace=workspace)
    campaign = None
    for i in range(n):
        contact = CustomerFactory(workspace=workspace, email=f"p{i}-{workspace.slug}@example.com")
        CustomerActivityFactory(customer=contact)
        campaign = CampaignFactory(workspace=workspace)
        post = PostFactory(workspace=workspace, campaign=campaign)
        link = LinkFactory(post=post)
        click = ClickFactory(link=link)
        ConversionEventFactory(click=click, customer=contact, event="sale", value_cents=100)
        ConversionEventFactory(click=click, customer=contact)
        step = CampaignEmailFactory(campaign=campaign, position=1)
        enrollment = EnrollmentFactory(campaign=campaign, customer=contact)
        CampaignLeadFactory(enrollment=enrollment)
        EmailSendFactory(enrollment=enrollment, campaign_email=step)
        SuppressionFactory(workspace=workspace)
        ApiTokenFactory(workspace=workspace)
        MembershipFactory(workspace=workspace)
    return {"contact": contact, "post": post, "campaign": campaign}


@pytest.mark.parametrize("size", [2, 25])
@pytest.mark.parametrize("name", CHANGELISTS)
def test_changelist_queries_are_bounded(
    request, size, name, as_alice, as_root, acme, globex, django_assert_max_num_queries
):
    populate(acme, size)
    populate(globex, 2)
    for client in (as_alice, as_root):
        client.get(reverse(f"admin:{name}_changelist"))  # warm the session and content types
        with django_assert_max_num_queries(MAX_QUERIES):
            response = client.get(reverse(f"admin:{name}_changelist"))
        assert response.status_code == 200
        assert len(response.context["cl"].result_list) >= 1


@pytest.mark.parametrize("size", [2, 25])
def test_pages_with_lists_in_them_are_bounded(size, as_alice, acme, django_assert_max_num_queries):
    rows = populate(acme, size)
    contact = rows["contact"]
    for _ in range(size):  # one contact with many of everything
        campaign = CampaignFactory(workspace=acme)
        EmailSendFactory(
            enrollment=EnrollmentFactory(campaign=campaign, customer=contact),
            campaign_email=CampaignEmailFactory(campaign=campaign, position=1),
        )
        ConversionEventFactory(click__link__post__workspace=acme, customer=contact)
        CustomerActivityFactory(customer=contact)
    segment = segment_save(workspace=acme, name="All", filters={})
    for n in range(size):  # and many broadcasts, each clicked
        broadcast = broadcast_save(workspace=acme, segment=segment, name=f"News {n}", subject="News", body="Hi")
        recipient = BroadcastRecipient.objects.create(
            workspace=acme, broadcast=broadcast, customer=contact, status="sent", sent_at=timezone.now()
        )
        link = LinkFactory(post=rows["post"])
        BroadcastLink.objects.create(workspace=acme, broadcast=broadcast, link=link, destination=link.destination)
        ClickFactory(link=link, broadcast_recipient_id=recipient.pk)
    post = rows["post"]
    for _ in range(size):
        LinkFactory(post=post)
    for _ in range(size):
        CampaignEmailFactory(campaign=rows["campaign"])
    pages = {
        # Clicks, the first touch, emails (of sequences and broadcasts) too, which email links they clicked, and
        # their tags.
        reverse("admin:customers_customer_change", args=[contact.pk]): 19,
        # Where its clicks came from; its revenue, and its links' revenue, per currency.
        reverse("admin:clicks_post_change", args=[post.pk]): 11,
        # Its funnel: 5 of them; its clicks and conversions per step: 2.
        reverse("admin:campaigns_campaign_change", args=[rows["campaign"].pk]): 14,
    }
    for path, bound in pages.items():
        as_alice.get(path)
        with django_assert_max_num_queries(bound):
            assert as_alice.get(path).status_code == 200
