"""Tags, segments and broadcasts in the back office: tags on the contact page and in a CSV import, a segment built
with its live count, a broadcast written, sent now and followed (sent / total / failed); never another workspace's."""

import pytest
from django.core import mail
from django.urls import reverse

from campaigns.broadcasts import broadcast_save
from campaigns.models import Broadcast, Segment
from campaigns.segments import segment_save
from campaigns.sending import run_pass
from customers.models import Customer
from customers.tags import contact_tags, contact_tags_add
from tests.backoffice.test_imports import PROCESS, confirm_data, upload
from tests.factories import CampaignFactory, CustomerFactory

pytestmark = pytest.mark.django_db

COUNT = reverse("admin:campaigns_segment_count")


def test_a_member_sets_a_contacts_tags_and_the_list_filters_by_tag(as_bob, acme):
    ada = CustomerFactory(workspace=acme, email="ada@example.com")
    CustomerFactory(workspace=acme, email="bo@example.com")
    page = as_bob.get(reverse("admin:customers_customer_change", args=[ada.pk])).content.decode()
    assert "Edit tags" in page

    url = reverse("admin:customers_customer_tags", args=[ada.pk])
    bad = as_bob.post(url, {"tags": "vip, <b>"})
    assert "tag has characters other than" in bad.content.decode() and contact_tags(ada) == []
    done = as_bob.post(url, {"tags": "VIP, early bird"})
    assert done.status_code == 302 and contact_tags(ada) == ["early bird", "vip"]

    listed = as_bob.get(reverse("admin:customers_customer_changelist"), {"tag": "vip"}).content.decode()
    assert "ada@example.com" in listed and "bo@example.com" not in listed


def test_another_workspaces_contact_tags_are_out_of_reach(as_charlie, acme):
    ada = CustomerFactory(workspace=acme, email="ada@example.com")
    response = as_charlie.post(reverse("admin:customers_customer_tags", args=[ada.pk]), {"tags": "x"})
    assert response.status_code in (302, 404) and contact_tags(ada) == []


def test_a_csv_import_tags_the_contacts_of_its_rows(as_bob, acme):
    text = 'email,name,tags\nada@example.com,Ada,"VIP, beta"\nbo@example.com,Bo,\n'
    preview = upload(as_bob, acme, text)
    assert preview.status_code == 200 and not Customer.objects.exists()
    as_bob.post(PROCESS, confirm_data(preview), follow=True)
    assert contact_tags(Customer.objects.get(email="ada@example.com")) == ["beta", "vip"]
    assert contact_tags(Customer.objects.get(email="bo@example.com")) == []


def test_a_bad_tag_in_a_csv_row_is_shown_and_nothing_can_be_confirmed(as_bob, acme):
    response = upload(as_bob, acme, "email,tags\nada@example.com,<script>\n")
    assert "tag has characters other than" in response.content.decode()
    assert "confirm_form" not in response.context or response.context["confirm_form"] is None


def test_an_owner_builds_a_segment_with_its_live_count(as_alice, acme, globex):
    for n in range(3):
        contact_tags_add(
            customer=CustomerFactory(workspace=acme, email=f"v{n}@example.com", source="api"), names=["vip"]
        )
    CustomerFactory(workspace=acme, email="other@example.com", source="pixel")
    contact_tags_add(customer=CustomerFactory(workspace=globex, email="g@example.com"), names=["vip"])

    assert as_alice.get(COUNT, {"workspace": acme.pk, "tags": "vip"}).json() == {"count": 3}
    assert as_alice.get(COUNT, {"workspace": acme.pk, "sources": ["pixel"]}).json() == {"count": 1}
    assert as_alice.get(COUNT, {"workspace": acme.pk}).json() == {"count": 4}
    assert as_alice.get(COUNT, {"workspace": acme.pk, "tags": "<b>"}).status_code == 422
    assert as_alice.get(COUNT, {"workspace": globex.pk, "tags": "vip"}).status_code == 422  # not a choice of hers

    add = as_alice.get(reverse("admin:campaigns_segment_add"))
    assert add.status_code == 200 and 'id="segment-count"' in add.content.decode()
    saved = as_alice.post(reverse("admin:campaigns_segment_add"), {"workspace": acme.pk, "name": "VIPs", "tags": "VIP"})
    assert saved.status_code == 302
    segment = Segment.objects.get(workspace=acme, name="VIPs")
    assert segment.filters == {"tags": ["vip"]}
    page = as_alice.get(reverse("admin:campaigns_segment_change", args=[segment.pk])).content.decode()
    assert "<strong>3</strong> contacts now" in page


def test_a_segment_naming_another_workspaces_campaign_is_refused(as_alice, acme, globex):
    theirs = CampaignFactory(workspace=globex, slug="theirs")
    response = as_alice.post(
        reverse("admin:campaigns_segment_add"), {"workspace": acme.pk, "name": "X", "campaign": theirs.pk}
    )
    assert response.status_code == 200 and not Segment.objects.exists()


def test_an_owner_writes_a_broadcast_sends_it_now_and_follows_its_progress(as_alice, acme, mailoutbox):
    for n in range(3):
        contact_tags_add(customer=CustomerFactory(workspace=acme, email=f"v{n}@example.com"), names=["vip"])
    segment = segment_save(workspace=acme, name="VIPs", filters={"tags": ["vip"]})
    added = as_alice.post(
        reverse("admin:campaigns_broadcast_add"),
        {
            "workspace": acme.pk,
            "segment": segment.pk,
            "name": "Spring",
            "subject": "Spring is here",
            "markdown": "Hello {{ name }}, see [the shop](https://shop.example/).",
            "body": "",
        },
    )
    assert added.status_code == 302, added.content.decode()[:2000]
    broadcast = Broadcast.objects.get(workspace=acme)
    assert broadcast.status == "draft" and "<a href" in broadcast.html
    sent = as_alice.post(
        reverse("admin:campaigns_broadcast_changelist"),
        {"action": "send_now", "_selected_action": [broadcast.pk]},
        follow=True,
    )
    assert "The sender starts on its next pass 1 broadcast(s)." in sent.content.decode()
    run_pass()
    assert sorted(message.to[0] for message in mail.outbox) == ["v0@example.com", "v1@example.com", "v2@example.com"]

    listed = as_alice.get(reverse("admin:campaigns_broadcast_changelist")).content.decode()
    assert "3 sent / 3 total, 0 failed, 0 skipped, 0 to go" in listed
    page = as_alice.get(reverse("admin:campaigns_broadcast_change", args=[broadcast.pk])).content.decode()
    assert "0 unique clicks (0.0% of sent), 0 leads, 0 sales" in page


def test_an_editor_reads_broadcasts_but_cannot_send_them(as_bob, acme):
    segment = segment_save(workspace=acme, name="All", filters={})
    broadcast = broadcast_save(workspace=acme, segment=segment, name="News", subject="News", body="Hi")
    as_bob.post(
        reverse("admin:campaigns_broadcast_changelist"), {"action": "send_now", "_selected_action": [broadcast.pk]}
    )
    broadcast.refresh_from_db()
    assert broadcast.status == "draft"
    assert as_bob.get(reverse("admin:campaigns_broadcast_changelist")).status_code == 200


def test_another_workspaces_broadcasts_and_segments_are_invisible(as_charlie, acme):
    segment = segment_save(workspace=acme, name="Acme VIPs", filters={})
    broadcast_save(workspace=acme, segment=segment, name="Acme secret news", subject="x", body="y")
    assert "Acme secret news" not in as_charlie.get(reverse("admin:campaigns_broadcast_changelist")).content.decode()
    assert "Acme VIPs" not in as_charlie.get(reverse("admin:campaigns_segment_changelist")).content.decode()
    assert as_charlie.get(reverse("admin:campaigns_segment_change", args=[segment.pk])).status_code in (302, 404)
