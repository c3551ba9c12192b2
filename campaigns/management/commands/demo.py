"""`manage.py demo`: a ready-to-try workspace, a fresh token, a tracked link and a campaign (used by `make run`)."""
import json
import secrets
import shlex

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction

from campaigns.models import Campaign
from campaigns.services import campaign_create, campaign_email_add, campaign_link_create
from clicks.models import Link
from lftrack.cli import JsonCommand
from workspaces.models import Membership, Workspace
from workspaces.services import api_token_create, membership_set, workspace_origin_allow

DEMO_SLUG = "demo"
# The demo landing page (DEBUG only) on our own address: it carries the pixel.
DEMO_LANDING = "/demo/landing?utm_source=lftrack-demo#signup"
DEMO_CAMPAIGN = "welcome"
DEMO_USER = "demo"


class Command(JsonCommand):
    help = "Create (or reuse) the demo workspace, link and campaign, and print a new demo API token."

    def add_arguments(self, parser) -> None:
        pass

    @transaction.atomic
    def handle(self, *args, **options) -> None:
        workspace, _ = Workspace.objects.get_or_create(slug=DEMO_SLUG, defaults={"name": "Demo"})
        campaign = Campaign.objects.filter(workspace=workspace, slug=DEMO_CAMPAIGN).first()
        if campaign is None:
            campaign = campaign_create(workspace=workspace, slug=DEMO_CAMPAIGN, name="Welcome sequence")
            campaign_email_add(
                campaign=campaign,
                subject="Welcome, {{ name }}",
                body="Hi {{ name }}, thanks for signing up with {{ email }}.",
                delay_minutes=0,
            )
        destination = settings.PUBLIC_BASE_URL + DEMO_LANDING
        link = Link.objects.filter(workspace=workspace, destination=destination).order_by("pk").first()
        if link is None:
            link = campaign_link_create(
                workspace=workspace, destination=destination, post_title="Demo post", campaign=campaign
            )
        workspace_origin_allow(workspace=workspace, origin=settings.PUBLIC_BASE_URL)  # the landing page's pixel
        # Secrets are never stored, so an earlier demo token cannot be shown again: mint a new one.
        issued = api_token_create(workspace=workspace, name="demo")
        base = settings.PUBLIC_BASE_URL
        leads_url = f"{base}/api/v1/campaigns/{campaign.slug}/leads"
        lead = json.dumps({"email": "ada@example.com", "name": "Ada Lovelace"})
        password = demo_owner_reset(workspace)
        self.emit(
            {
                "workspace": workspace.slug,
                "tracking_key": workspace.tracking_key,
                "token": issued.secret,
                "link": {"id": link.pk, "key": link.key, "url": f"{base}/l/{link.key}"},
                "campaign": {"slug": campaign.slug, "leads_url": leads_url},
                "try": f"curl -i {base}/l/{link.key}",
                "try_lead": (
                    f"curl -s {leads_url} -H {shlex.quote('Authorization: Bearer ' + issued.secret)}"
                    f" -H 'Content-Type: application/json' -d {shlex.quote(lead)}"
                ),
                "admin": {"url": f"{base}/admin/", "username": DEMO_USER, "password": password},
            }
        )


def demo_owner_reset(workspace: Workspace) -> str:
    """The staff user `demo`, owner of the demo workspace, with a new random password (printed once)."""
    user, _ = get_user_model().objects.get_or_create(username=DEMO_USER)
    password = secrets.token_urlsafe(12)
    user.set_password(password)
    user.is_active = True
    user.save()
    membership_set(workspace=workspace, user=user, role=Membership.Role.OWNER)  # also makes them staff
    return password
