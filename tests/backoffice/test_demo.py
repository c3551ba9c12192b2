"""`manage.py demo` gives a person an admin login (user `demo`, owner of the demo workspace) and a token,
the same on every run until `--reset`."""

import json
import re
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client

from workspaces.models import ApiToken, Membership
from workspaces.tokens import api_token_authenticate

pytestmark = pytest.mark.django_db
LOGIN = "/admin/login/?next=/admin/"


def demo(*args) -> dict:
    out = StringIO()
    call_command("demo", *args, stdout=out)
    return json.loads(out.getvalue())


def logs_in(password: str) -> bool:
    return Client().post(LOGIN, {"username": "demo", "password": password}).status_code == 302


def test_demo_prints_the_same_owner_login_and_token_on_each_run():
    first, second = demo(), demo()
    assert first == second
    assert first["admin"]["username"] == "demo" and first["admin"]["url"].endswith("/admin/")
    assert logs_in(first["admin"]["password"])
    assert ApiToken.objects.filter(workspace__slug="demo", revoked_at__isnull=True).count() == 1
    assert api_token_authenticate(first["token"]).workspace.slug == "demo"
    membership = Membership.objects.get(user__username="demo", workspace__slug="demo")
    assert membership.role == "owner" and membership.user.is_staff
    client = Client()
    client.post(LOGIN, {"username": "demo", "password": first["admin"]["password"]})
    page = client.get("/admin/workspaces/apitoken/").content.decode()
    assert "Manage tokens" in page and membership.workspace.tracking_key in page


def test_reset_revokes_the_token_and_sets_a_new_password():
    first = demo()
    reset = demo("--reset")
    assert reset["token"] != first["token"] and reset["admin"]["password"] != first["admin"]["password"]
    assert api_token_authenticate(reset["token"]).workspace.slug == "demo"
    assert api_token_authenticate(first["token"]) is None
    assert not logs_in(first["admin"]["password"]) and logs_in(reset["admin"]["password"])
    assert demo() == reset


def test_a_password_changed_by_its_owner_is_kept_and_not_printed():
    demo()
    user = get_user_model().objects.get(username="demo")
    user.set_password("my own long passphrase")
    user.save()
    again = demo()
    assert again["admin"]["password"] is None and "--reset" in again["admin"]["note"]
    assert logs_in("my own long passphrase")


def test_a_token_revoked_in_the_back_office_is_replaced_by_a_working_one():
    first = demo()
    ApiToken.objects.filter(workspace__slug="demo").update(revoked_at="2026-01-01T00:00:00Z")
    second = demo()
    assert second["token"] != first["token"]
    assert api_token_authenticate(second["token"]).workspace.slug == "demo"


def test_the_password_outlives_a_token_revoked_in_the_back_office():
    first = demo()
    ApiToken.objects.filter(workspace__slug="demo").update(revoked_at="2026-01-01T00:00:00Z")
    assert demo()["admin"]["password"] == first["admin"]["password"]


def test_demo_refuses_the_key_everyone_knows(settings):
    settings.SECRET_KEY = settings.FALLBACK_SECRET_KEY
    with pytest.raises(Exception, match="demo needs a SECRET_KEY of its own"):
        demo()


def test_the_demo_welcome_is_an_html_email_whose_link_to_the_landing_page_is_tracked(mailoutbox, settings):
    from campaigns.models import CampaignEmail, EmailLink, EmailSend
    from campaigns.sending import run_pass
    from campaigns.services import campaign_lead_add
    from clicks.models import Click

    demo()
    step = CampaignEmail.objects.get(campaign__workspace__slug="demo", campaign__slug="welcome", position=1)
    landing = settings.PUBLIC_BASE_URL + "/demo/landing?utm_source=lftrack-demo&utm_medium=email#signup"
    assert step.markdown and f'<a href="{landing.replace("&", "&amp;")}"' in step.html
    assert demo()["campaign"]["slug"] == "welcome"  # a second run changes nothing
    assert CampaignEmail.objects.filter(campaign=step.campaign).count() == 1

    enrollment = campaign_lead_add(campaign=step.campaign, email="ada@example.com", name="Ada").enrollment
    assert run_pass().sent == 1
    [message] = mailoutbox
    html = message.alternatives[0][0]
    assert "Welcome, Ada" in html and "Demo Inc.<br>1 Example Street, Springfield" in html
    link = EmailLink.objects.get(campaign_email=step)
    assert link.destination == landing
    tracked = re.search(r'href="([^"]*/l/' + link.link.key + r'\?lf_e=[^"]+)"', html).group(1)
    followed = Client().get(tracked.replace(settings.PUBLIC_BASE_URL, ""), HTTP_USER_AGENT="Mozilla/5.0 (X11; Linux)")
    assert followed.status_code == 302 and followed["Location"].startswith(
        settings.PUBLIC_BASE_URL + "/demo/landing?utm_source=lftrack-demo&utm_medium=email&lf_cid="
    )
    click = Click.objects.get(link=link.link)
    assert click.email_send_id == EmailSend.objects.get(enrollment=enrollment).pk


def test_an_older_demos_plain_welcome_becomes_the_html_one():
    from campaigns.models import CampaignEmail
    from campaigns.services import campaign_create, campaign_email_add
    from workspaces.models import Workspace

    workspace = Workspace.objects.create(slug="demo", name="Demo")
    campaign = campaign_create(workspace=workspace, slug="welcome", name="Welcome sequence")
    campaign_email_add(
        campaign=campaign,
        subject="Welcome, {{ name }}",
        body="Hi {{ name }}, thanks for signing up with {{ email }}.",
        delay_minutes=0,
    )
    demo()
    assert "Open the demo landing page" in CampaignEmail.objects.get(campaign=campaign).html
