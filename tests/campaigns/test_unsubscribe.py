"""Unsubscribe links: signed tokens, the confirmation page, the one-click POST, and every way a link can be bad."""

import pytest
from django.core import signing
from django.test import Client

from campaigns.models import Enrollment, Suppression
from campaigns.services import campaign_lead_add, suppression_add
from campaigns.unsubscribe import unsubscribe_token, unsubscribe_token_read, unsubscribe_url
from customers.models import CustomerActivity
from lftrack.errors import BadRequest
from tests.factories import CampaignEmailFactory, CampaignFactory, WorkspaceFactory

pytestmark = pytest.mark.django_db

ONE_CLICK = "List-Unsubscribe=One-Click"


@pytest.fixture
def ada(acme, campaign):
    """Ada, enrolled in two of acme's campaigns."""
    other = CampaignFactory(workspace=acme, slug="autumn")
    CampaignEmailFactory(campaign=other, position=1)
    return [campaign_lead_add(campaign=c, email="Ada@Example.com", name="Ada").enrollment for c in (campaign, other)]


def path_for(workspace, email="Ada@Example.com") -> str:
    return "/u/" + unsubscribe_token(workspace_id=workspace.pk, email=email)


def one_click(path: str):
    # What a mail client sends (RFC 8058): a form-encoded POST with no cookie and no CSRF token.
    return Client(enforce_csrf_checks=True).post(path, ONE_CLICK, content_type="application/x-www-form-urlencoded")


def assert_invalid(response) -> None:
    assert response.status_code == 400
    assert response["Content-Type"].startswith("text/html")
    assert b"This unsubscribe link is not valid" in response.content


def test_the_url_is_on_the_public_base_url_and_the_token_reads_back(acme, settings):
    settings.PUBLIC_BASE_URL = "https://track.example.com"
    url = unsubscribe_url(workspace_id=acme.pk, email="Ada@Example.com")
    assert url.startswith("https://track.example.com/u/")
    assert unsubscribe_token_read(token=url.rsplit("/", 1)[1]) == (acme.pk, "Ada@Example.com")
    assert "Ada@Example.com" not in url  # base64 in the token, not the address in clear


def test_get_shows_a_confirmation_page_and_changes_nothing(acme, ada):
    response = Client().get(path_for(acme))
    assert response.status_code == 200
    html = response.content.decode()
    assert "Unsubscribe from Acme?" in html
    assert "<strong>Ada@Example.com</strong>" in html
    assert '<form method="post">' in html and '<button type="submit">Unsubscribe</button>' in html
    assert "no-store" in response["Cache-Control"]
    assert not Suppression.objects.exists()
    assert {e.state for e in Enrollment.objects.all()} == {"active"}


def test_pressing_the_button_unsubscribes_and_stops_every_enrollment(acme, ada):
    response = Client(enforce_csrf_checks=True).post(path_for(acme), {"List-Unsubscribe": "One-Click"})
    assert response.status_code == 200
    assert "You are unsubscribed" in response.content.decode()
    suppression = Suppression.objects.get()
    assert (suppression.workspace, suppression.email, suppression.reason) == (acme, "ada@example.com", "unsubscribed")
    assert {(e.state, e.next_send_at) for e in Enrollment.objects.all()} == {("stopped", None)}
    activity = CustomerActivity.objects.get(kind="suppressed")
    assert (activity.channel, activity.detail) == ("email", {"reason": "unsubscribed"})


def test_the_one_click_post_from_a_mail_client_unsubscribes(acme, ada):
    response = one_click(path_for(acme))
    assert response.status_code == 200
    assert Suppression.objects.get().reason == "unsubscribed"
    assert {e.state for e in Enrollment.objects.all()} == {"stopped"}


def test_unsubscribing_again_changes_nothing(acme, ada):
    for _ in range(3):
        assert one_click(path_for(acme)).status_code == 200
    assert Suppression.objects.count() == 1
    assert CustomerActivity.objects.filter(kind="suppressed").count() == 1


def test_an_earlier_reason_is_kept(acme, ada):
    suppression_add(workspace=acme, email="ada@example.com", reason="bounced", channel="manual")
    assert one_click(path_for(acme)).status_code == 200
    assert Suppression.objects.get().reason == "bounced"


def test_a_link_unsubscribes_only_in_its_own_workspace(acme, globex, ada):
    globex_campaign = CampaignFactory(workspace=globex, slug="news")
    CampaignEmailFactory(campaign=globex_campaign, position=1)
    globex_enrollment = campaign_lead_add(campaign=globex_campaign, email="ada@example.com").enrollment

    assert one_click(path_for(acme)).status_code == 200
    assert list(Suppression.objects.values_list("workspace__slug", flat=True)) == ["acme"]
    globex_enrollment.refresh_from_db()
    assert globex_enrollment.state == "active"


def test_a_page_for_an_address_with_no_contact_still_suppresses_it(acme):
    assert one_click(path_for(acme, "nobody@example.com")).status_code == 200
    assert Suppression.objects.get().email == "nobody@example.com"


def _tampered(token: str) -> list[str]:
    payload, signature = token.rsplit(":", 1)
    flip = lambda c: "A" if c != "A" else "B"  # noqa: E731
    return [
        f"{payload}:{signature[:-1]}{flip(signature[-1])}",  # signature changed
        f"{flip(payload[0])}{payload[1:]}:{signature}",  # payload changed
        token[:-5],  # truncated (a mail client cut it)
        payload,  # no signature at all
        f"{payload}:",
        ":" + signature,
    ]


def test_tampered_or_truncated_links_get_a_clear_400_page(acme, ada):
    token = unsubscribe_token(workspace_id=acme.pk, email="Ada@Example.com")
    for bad in _tampered(token):
        assert_invalid(Client().get("/u/" + bad))
        assert_invalid(one_click("/u/" + bad))
    assert not Suppression.objects.exists()


def test_a_token_pointing_at_another_workspace_cannot_be_forged(acme, globex, ada):
    token = unsubscribe_token(workspace_id=acme.pk, email="ada@example.com")
    payload = signing.b64_encode(f'[{globex.pk},"ada@example.com"]'.encode()).decode()
    assert_invalid(one_click(f"/u/{payload}:{token.rsplit(':', 1)[1]}"))
    assert not Suppression.objects.exists()


@pytest.mark.parametrize(
    "token",
    [
        signing.Signer(salt="some.other.salt").sign_object([1, "ada@example.com"]),  # another signer's value
        signing.dumps([1, "ada@example.com"]),  # Django's default salt, with a timestamp
        "x" * 2000,
        "abc",
        "..",
        "😀:😀",
    ],
    ids=["other-salt", "default-salt", "too-long", "garbage", "dots", "emoji"],
)
def test_foreign_and_garbage_tokens_get_the_400_page(acme, token):
    assert_invalid(Client().get("/u/" + token))
    assert_invalid(one_click("/u/" + token))


def test_a_nul_in_the_link_is_a_400_too(acme):
    # Refused by lftrack.middleware before any view: PostgreSQL cannot hold NUL.
    assert Client().get("/u/abc%00def").status_code == 400
    assert one_click("/u/abc%00def").status_code == 400


@pytest.mark.parametrize(
    "payload",
    [[True, "ada@example.com"], [0, "ada@example.com"], ["1", "ada@example.com"], [1, ""], [1, 2], [1], {"w": 1}, "x"],
)
def test_our_signature_on_a_wrong_shape_is_still_refused(payload):
    token = signing.Signer(salt="lftrack.campaigns.unsubscribe").sign_object(payload)
    with pytest.raises(BadRequest, match=r"^invalid unsubscribe link$"):
        unsubscribe_token_read(token=token)


def test_a_deleted_workspaces_link_is_invalid(db):
    gone = WorkspaceFactory(slug="gone")
    path = path_for(gone)
    gone.delete()
    assert_invalid(Client().get(path))
    assert_invalid(one_click(path))


def test_other_methods_are_refused_without_an_error_page(acme):
    response = Client().put(path_for(acme))
    assert response.status_code == 405
    assert not Suppression.objects.exists()
