"""Posts and links: clicks, leads, sales and revenue per link and per post, counted in SQL."""

import pytest
from django.urls import reverse

from clicks.models import Link, Post
from rollups.selectors import money_of
from tests.conftest import form_of
from tests.factories import CampaignFactory, ClickFactory, ConversionEventFactory, LinkFactory, PostFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def launch(acme, globex):
    post = PostFactory(workspace=acme, title="Launch")
    busy = LinkFactory(post=post, destination="https://acme.test/busy")
    quiet = LinkFactory(post=post, destination="https://acme.test/quiet")
    clicks = [ClickFactory(link=busy) for _ in range(3)] + [ClickFactory(link=quiet)]
    ConversionEventFactory(click=clicks[0], event="lead")
    ConversionEventFactory(click=clicks[1], event="lead")
    ConversionEventFactory(click=clicks[1], event="sale", value_cents=49000)
    ConversionEventFactory(click=clicks[2], event="sale", value_cents=1050)
    ConversionEventFactory(click=clicks[2], event="sale", value_cents=None)  # a sale without value counts, adds nothing
    ConversionEventFactory(click=clicks[2], event="sale", value_cents=1999, currency="EUR")  # never added to dollars
    ConversionEventFactory(click=clicks[3], event="lead")
    other = LinkFactory(post__workspace=globex)
    ConversionEventFactory(click=ClickFactory(link=other), event="sale", value_cents=999999)
    return post, busy, quiet


def numbers(obj, group: str = "link") -> tuple:
    revenue = getattr(obj, "revenue_shown", None) or money_of(group=group, **{f"{group}_ids": [obj.pk]}).get(obj.pk, [])
    return obj.n_clicks, obj.n_leads, obj.n_sales, {entry["currency"]: entry["net_cents"] for entry in revenue}


def test_post_page_lists_its_links_with_their_numbers(as_bob, launch):
    post, busy, quiet = launch
    response = as_bob.get(reverse("admin:clicks_post_change", args=[post.pk]))
    assert response.status_code == 200
    inline = response.context["inline_admin_formsets"][0]
    rows = {form.original.pk: numbers(form.original) for form in inline}
    assert rows == {busy.pk: (3, 2, 4, {"USD": 50050, "EUR": 1999}), quiet.pk: (1, 1, 0, {})}
    page = response.content.decode()
    assert f"/l/{busy.key}" in page and "19.99 EUR<br>500.50 USD" in page


def test_post_list_sums_its_links(as_bob, launch):
    post, _, _ = launch
    response = as_bob.get(reverse("admin:clicks_post_changelist"))
    (row,) = response.context["cl"].result_list
    assert row.pk == post.pk and row.n_links == 2
    assert numbers(row, "post") == (4, 3, 4, {"USD": 50050, "EUR": 1999})
    assert "19.99 EUR<br>500.50 USD" in response.content.decode()


def test_link_list_has_the_same_numbers(as_bob, launch):
    _, busy, quiet = launch
    response = as_bob.get(reverse("admin:clicks_link_changelist"))
    rows = {link.pk: numbers(link) for link in response.context["cl"].result_list}
    assert rows == {busy.pk: (3, 2, 4, {"USD": 50050, "EUR": 1999}), quiet.pk: (1, 1, 0, {})}


def test_owner_moves_a_post_into_a_campaign(as_alice, as_bob, launch, acme):
    post, busy, quiet = launch
    campaign = CampaignFactory(workspace=acme)
    data = {
        "title": "Launch v2",
        "campaign": campaign.pk,
        "links-TOTAL_FORMS": 2,
        "links-INITIAL_FORMS": 2,
        "links-MIN_NUM_FORMS": 0,
        "links-MAX_NUM_FORMS": 1000,
        "links-0-id": busy.pk,
        "links-0-post": post.pk,
        "links-1-id": quiet.pk,
        "links-1-post": post.pk,
    }
    assert as_bob.post(reverse("admin:clicks_post_change", args=[post.pk]), data).status_code == 403
    assert as_alice.post(reverse("admin:clicks_post_change", args=[post.pk]), data).status_code == 302
    post.refresh_from_db()
    assert (post.title, post.campaign_post.campaign_id) == ("Launch v2", campaign.pk)


def test_link_and_post_pages_show_where_the_clicks_came_from(as_bob, acme, globex):
    post = PostFactory(workspace=acme, title="Launch")
    link, other = LinkFactory(post=post), LinkFactory(post=post)
    for device, browser, domain in [("mobile", "Mobile Safari", "t.co")] * 3 + [("desktop", "Chrome", "")] * 2:
        ClickFactory(link=link, device=device, browser=browser, os="iOS", referrer_domain=domain)
    ClickFactory(link=other, device="tablet", browser="Chrome", os="Android", referrer_domain="facebook.com")
    ClickFactory(link=LinkFactory(post__workspace=globex), device="bot", browser="Globex-only")

    page = as_bob.get(reverse("admin:clicks_link_change", args=[link.pk])).content.decode()
    assert "<li>mobile <b>3</b></li><li>desktop <b>2</b></li>" in page
    assert "<li>t.co <b>3</b></li><li>(none) <b>2</b></li>" in page
    assert "tablet" not in page and "Globex-only" not in page

    page = as_bob.get(reverse("admin:clicks_post_change", args=[post.pk])).content.decode()
    assert "<li>Chrome <b>3</b></li><li>Mobile Safari <b>3</b></li>" in page
    assert "<li>facebook.com <b>1</b></li>" in page and "Globex-only" not in page


def test_a_link_without_clicks_says_so(as_bob, acme):
    link = LinkFactory(post__workspace=acme)
    assert "No clicks yet." in as_bob.get(reverse("admin:clicks_link_change", args=[link.pk])).content.decode()


ADD_LINK = reverse("admin:clicks_link_add")


def test_owners_make_a_link_in_a_post_and_campaign_and_get_its_short_url(as_alice, acme, settings):
    campaign = CampaignFactory(workspace=acme, name="Spring")
    PostFactory(workspace=acme, title="Launch")
    response = as_alice.post(
        ADD_LINK,
        form_of(
            as_alice,
            ADD_LINK,
            workspace=acme.pk,
            post_title="Launch",
            destination="https://shop.example.com/spring?x=1",
            campaign=campaign.pk,
        ),
    )
    link = Link.objects.get(destination="https://shop.example.com/spring?x=1")
    assert response.status_code == 302 and response["Location"] == reverse("admin:clicks_link_change", args=[link.pk])
    assert link.post.title == "Launch" and Post.objects.filter(workspace=acme, title="Launch").count() == 1
    assert link.post.campaign_post.campaign == campaign
    page = as_alice.get(response["Location"]).content.decode()
    assert f'value="{settings.PUBLIC_BASE_URL}/l/{link.key}"' in page and 'data-copy="link-' in page


def test_a_link_form_refuses_bad_input_and_foreign_campaigns(as_alice, acme, globex):
    foreign = CampaignFactory(workspace=globex)
    bad = as_alice.post(ADD_LINK, form_of(as_alice, ADD_LINK, workspace=acme.pk, destination="javascript:alert(1)"))
    assert bad.status_code == 200 and "Enter a valid URL" in bad.content.decode()
    as_alice.post(
        ADD_LINK,
        form_of(as_alice, ADD_LINK, workspace=acme.pk, destination="https://shop.example.com/", campaign=foreign.pk),
    )
    assert not Link.objects.exists()


def test_editors_cannot_make_links(as_bob, acme):
    assert as_bob.get(ADD_LINK).status_code == 403
    as_bob.post(ADD_LINK, {"workspace": acme.pk, "destination": "https://shop.example.com/"})
    assert not Link.objects.exists()


def test_a_links_page_gives_its_qr_code_to_see_and_to_download(as_bob, acme, settings):
    import base64
    import io

    import segno

    link = LinkFactory(post__workspace=acme)
    page = as_bob.get(reverse("admin:clicks_link_change", args=[link.pk])).content.decode()
    expected = io.BytesIO()
    segno.make(f"{settings.PUBLIC_BASE_URL}/l/{link.key}", error="m").save(expected, kind="svg", scale=4, xmldecl=False)
    assert expected.getvalue().decode() in page  # the short link's own code, inline
    encoded = base64.b64encode(expected.getvalue()).decode()
    assert f'href="data:image/svg+xml;base64,{encoded}" download="link-{link.key}.svg"' in page


def test_a_link_form_sent_twice_makes_one_link(as_alice, acme):
    data = form_of(as_alice, ADD_LINK, workspace=acme.pk, destination="https://shop.example.com/once")
    assert as_alice.post(ADD_LINK, data).status_code == 302
    again = as_alice.post(ADD_LINK, data, follow=True)
    assert again.status_code == 200 and Link.objects.filter(destination="https://shop.example.com/once").count() == 1
