"""`campaign`, `suppress`, `link create --campaign` and `demo`: one JSON line out, one-line errors."""

import json
import subprocess
import sys
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from campaigns.models import Campaign, CampaignEmail, Enrollment, Suppression
from campaigns.services import campaign_lead_add, campaign_link_create
from clicks.models import Link
from lftrack.errors import Unprocessable
from tests.campaigns.conftest import NOW
from tests.factories import CampaignEmailFactory, CampaignFactory
from workspaces.tokens import api_token_authenticate

pytestmark = pytest.mark.django_db


def run(*args) -> dict:
    out = StringIO()
    call_command(*args, stdout=out)
    lines = out.getvalue().strip().splitlines()
    assert len(lines) == 1
    return json.loads(lines[0])


def test_campaign_add_email_in_markdown(acme, campaign):
    result = run(
        "campaign",
        "add-email",
        "acme",
        "spring",
        "--subject",
        "Hi",
        "--markdown",
        "**Hello** {{ name }}",
        "--delay-minutes",
        "0",
    )
    step = CampaignEmail.objects.get(pk=result["id"])
    assert (step.html, step.body) == ("<p><strong>Hello</strong> {{ name }}</p>", "Hello {{ name }}")


def test_campaign_create(acme):
    result = run("campaign", "create", "acme", "spring", "--name", "Spring launch")
    campaign = Campaign.objects.get(workspace=acme, slug="spring")
    assert result == {"id": campaign.pk, "slug": "spring"}
    assert campaign.name == "Spring launch"


def test_campaign_add_email_and_activate_it(acme, clock):
    campaign = CampaignFactory(workspace=acme, slug="spring")
    waiting = campaign_lead_add(campaign=campaign, email="ada@example.com").enrollment
    first = run(
        "campaign",
        "add-email",
        "acme",
        "spring",
        "--subject",
        "Welcome",
        "--body",
        "Hi {{ name }}",
        "--delay-minutes",
        "30",
        "--inactive",
    )
    step = CampaignEmail.objects.get()
    assert first == {"id": step.pk, "position": 1, "active": False}
    assert (step.subject, step.body, step.delay_minutes) == ("Welcome", "Hi {{ name }}", 30)
    second = run("campaign", "add-email", "acme", "spring", "--subject", "Tips", "--body", "B", "--delay-minutes", "0")
    assert second["position"] == 2 and second["active"] is True

    assert run("campaign", "activate-email", "acme", "spring", "1") == {
        "id": step.pk,
        "position": 1,
        "active": True,
        "already_active": False,
    }
    assert (
        run("campaign", "activate-email", "acme", "spring", "1")["already_active"] is True
    )  # says so, changes nothing
    assert Enrollment.objects.get(pk=waiting.pk).next_send_at.isoformat() == "2026-03-02T09:30:00+00:00"


def test_campaign_stop(acme, campaign, clock):
    enrollment = campaign_lead_add(campaign=campaign, email="Ada@Example.com").enrollment
    result = run("campaign", "stop", "acme", "spring", "ada@EXAMPLE.com")
    assert result == {
        "enrollment": {
            "id": enrollment.pk,
            "state": "stopped",
            "enrolled_at": "2026-03-02T09:00:00.000000Z",
            "next_send_at": None,
        }
    }
    assert Enrollment.objects.get().stopped_at == NOW


def test_suppress(acme, campaign):
    enrollment = campaign_lead_add(campaign=campaign, email="ada@example.com").enrollment
    assert run("suppress", "acme", "Ada@Example.com", "--reason", "complained") == {
        "email": "ada@example.com",
        "reason": "complained",
    }
    assert Suppression.objects.get().workspace == acme
    assert Enrollment.objects.get(pk=enrollment.pk).state == "stopped"
    # idempotent: the first reason stays
    assert run("suppress", "acme", "ADA@example.com", "--reason", "bounced")["reason"] == "complained"


def test_link_create_with_a_campaign(acme, campaign):
    result = run("link", "create", "acme", "https://e.com/a", "--post", "Launch", "--campaign", "spring")
    assert Link.objects.get(pk=result["id"]).post.campaign_post.campaign == campaign


def test_link_create_refuses_another_workspaces_campaign(acme, globex_campaign):
    with pytest.raises(Unprocessable, match=r"^unknown campaign: globex-only$"):
        campaign_link_create(workspace=acme, destination="https://e.com/a", campaign=globex_campaign)
    assert not Link.objects.exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["campaign", "create", "nope", "spring"], "unknown workspace: nope"),
        (["campaign", "create", "acme", "Spring!"], "slug must be lowercase letters, digits and hyphens"),
        (["campaign", "create", "acme", "spring"], "campaign already exists: spring"),
        (
            ["campaign", "add-email", "acme", "nope", "--subject", "S", "--body", "B", "--delay-minutes", "0"],
            "unknown campaign: nope",
        ),
        (
            ["campaign", "add-email", "acme", "globex-only", "--subject", "S", "--body", "B", "--delay-minutes", "0"],
            "unknown campaign: globex-only",
        ),
        (
            ["campaign", "add-email", "acme", "spring", "--subject", "S", "--body", "B", "--delay-minutes", "-5"],
            "delay_minutes must be a non-negative integer",
        ),
        (
            ["campaign", "add-email", "acme", "spring", "--subject", "", "--body", "B", "--delay-minutes", "5"],
            "subject is required",
        ),
        (
            [
                "campaign",
                "add-email",
                "acme",
                "spring",
                "--subject",
                "S",
                "--markdown",
                "<script>x</script>",
                "--delay-minutes",
                "5",
            ],
            "markdown has no content once sanitized",
        ),
        (["campaign", "activate-email", "acme", "spring", "9"], "no email at position 9 in spring"),
        (["campaign", "activate-email", "acme", "nope", "1"], "unknown campaign: nope"),
        (["campaign", "stop", "acme", "spring", "nobody@example.com"], "not enrolled: nobody@example.com"),
        (["campaign", "stop", "acme", "nope", "nobody@example.com"], "unknown campaign: nope"),
        (["suppress", "nope", "ada@example.com", "--reason", "bounced"], "unknown workspace: nope"),
        (["suppress", "acme", "not-an-address", "--reason", "bounced"], "invalid email"),
        (["link", "create", "acme", "https://e.com", "--campaign", "globex-only"], "unknown campaign: globex-only"),
    ],
)
def test_bad_input_raises_a_one_line_error(acme, campaign, globex_campaign, args, message):
    with pytest.raises(CommandError, match=f"^{message}$"):
        call_command(*args, stdout=StringIO())


def test_activate_email_is_by_position_within_the_named_campaign(acme, campaign):
    other = CampaignEmailFactory(campaign=CampaignFactory(workspace=acme, slug="other"), position=2, active=False)
    with pytest.raises(CommandError, match=r"^no email at position 2 in spring$"):
        call_command("campaign", "activate-email", "acme", "spring", "2", stdout=StringIO())
    other.refresh_from_db()
    assert not other.active


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["suppress", "acme", "ada@example.com", "--reason", "spam"], "invalid choice: 'spam'"),
        (["suppress", "acme", "ada@example.com"], "the following arguments are required: --reason"),
        (["campaign", "add-email", "acme", "spring", "--subject", "S", "--body", "B"], "required: --delay-minutes"),
        (
            ["campaign", "add-email", "acme", "spring", "--subject", "S", "--body", "B", "--delay-minutes", "soon"],
            "invalid int value",
        ),
        (["campaign", "activate-email", "acme", "spring", "first"], "invalid int value"),
    ],
)
def test_bad_arguments_are_refused_by_the_parser(args, message):
    with pytest.raises(CommandError, match=message):
        call_command(*args, stdout=StringIO())


def test_bad_reason_exits_non_zero_from_the_shell():
    proc = subprocess.run(
        [sys.executable, "manage.py", "suppress", "acme", "ada@example.com", "--reason", "spam"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode != 0 and proc.stdout == ""
    assert "invalid choice: 'spam'" in proc.stderr


def test_demo_has_a_campaign_whose_leads_endpoint_works(api):
    first = run("demo")
    second = run("demo")
    assert (
        first["campaign"]
        == second["campaign"]
        == {
            "slug": "welcome",
            "leads_url": "http://127.0.0.1:8000/api/v1/campaigns/welcome/leads",
        }
    )
    campaign = Campaign.objects.get(workspace__slug="demo", slug="welcome")
    assert list(campaign.emails.values_list("position", "active")) == [(1, True)]
    assert Link.objects.get(pk=second["link"]["id"]).post.campaign_post.campaign == campaign
    assert second["try_lead"].startswith("curl -s http://127.0.0.1:8000/api/v1/campaigns/welcome/leads ")
    assert f"Bearer {second['token']}" in second["try_lead"]
    token = api_token_authenticate(second["token"])
    resp = api.post("/api/v1/campaigns/welcome/leads", {"email": "ada@example.com"}, token=second["token"])
    assert resp.status_code == 201 and resp.json()["enrollment"]["next_send_at"] is not None
    assert token.workspace == campaign.workspace
