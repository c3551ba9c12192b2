"""`manage.py demo [--reset]`: a ready-to-try workspace, token, tracked link and campaign (used by `make run`).

Idempotent: a second run prints the same token and admin password. Neither is stored in clear: both
are derived from SECRET_KEY and a generation, the number of demo tokens revoked so far. `--reset`
revokes the token (one more generation) and sets the derived password of the next one. A password
changed in the back office is kept, and then not printed.
"""

import base64
import json
import shlex

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import CommandError
from django.db import transaction
from django.utils import timezone
from django.utils.crypto import salted_hmac

from campaigns.models import Campaign, CampaignEmail
from campaigns.services import campaign_create, campaign_email_add, campaign_link_create
from campaigns.steps import campaign_email_edit
from clicks.models import Link
from lftrack.cli import JsonCommand
from workspaces.models import ApiToken, Membership, Workspace
from workspaces.origins import workspace_origin_allow
from workspaces.services import membership_set, workspace_email_layout_set
from workspaces.tokens import TOKEN_PREFIX, api_token_create, api_tokens_changed, token_digest

DEMO_SLUG = "demo"
# The demo landing page (DEBUG only) on our own address: it carries the pixel.
DEMO_LANDING = "/demo/landing?utm_source=lftrack-demo#signup"
DEMO_CAMPAIGN = "welcome"
# The welcome email's link back to the landing page: tracked when sent, so a newcomer sees email, click, lead and
# the step's numbers (docs/email.md, "Tracked links").
DEMO_EMAIL_LANDING = "/demo/landing?utm_source=lftrack-demo&utm_medium=email#signup"
DEMO_PLAIN_BODY = "Hi {{ name }}, thanks for signing up with {{ email }}."  # the welcome of demos made before HTML
DEMO_WELCOME = """# Welcome, {{ name }}

Thanks for signing up with **{{ email }}**. This is the demo's HTML email: written in Markdown in the back
office, sanitized on save, and sent in the workspace's layout with a plain-text part made from it.

Every link in it goes through lftrack's redirect, so following this one is recorded as a click of this email,
by you, without any cookie:

[Open the demo landing page]({landing})

Sign up there and the lead is credited to this email: the campaign's page shows it under
*Clicks and conversions per email*.
"""
DEMO_USER = "demo"
DEMO_TOKEN_NAME = "demo"


class Command(JsonCommand):
    help = "Create (or reuse) the demo workspace, token, link, campaign and owner login, and print them."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--reset", action="store_true", help="revoke the demo token; new token and password")

    @transaction.atomic
    def handle(self, *args, reset: bool = False, **options) -> None:
        if settings.SECRET_KEY == settings.FALLBACK_SECRET_KEY:  # its token and password would be anyone's to compute
            raise CommandError("demo needs a SECRET_KEY of its own: `make run` writes one in .env")
        workspace, _ = Workspace.objects.get_or_create(slug=DEMO_SLUG, defaults={"name": "Demo"})
        campaign = Campaign.objects.filter(workspace=workspace, slug=DEMO_CAMPAIGN).first()
        welcome = DEMO_WELCOME.replace("{landing}", settings.PUBLIC_BASE_URL + DEMO_EMAIL_LANDING)
        if campaign is None:
            campaign = campaign_create(workspace=workspace, slug=DEMO_CAMPAIGN, name="Welcome sequence")
            campaign_email_add(campaign=campaign, subject="Welcome, {{ name }}", markdown=welcome, delay_minutes=0)
        else:  # a demo made before HTML emails: its untouched plain welcome becomes the HTML one
            first = CampaignEmail.objects.filter(campaign=campaign, position=1, markdown="", body=DEMO_PLAIN_BODY)
            if (step := first.first()) is not None:
                campaign_email_edit(campaign_email=step, subject=step.subject, body="", markdown=welcome)
        if not workspace.postal_address:  # the layout's footer (CAN-SPAM): a made-up address for the demo
            workspace_email_layout_set(
                workspace=workspace,
                logo_url="",
                brand_color=workspace.email_brand_color,
                postal_address="Demo Inc.\n1 Example Street, Springfield",
            )
        destination = settings.PUBLIC_BASE_URL + DEMO_LANDING
        link = Link.objects.filter(workspace=workspace, destination=destination).order_by("pk").first()
        if link is None:
            link = campaign_link_create(
                workspace=workspace, destination=destination, post_title="Demo post", campaign=campaign
            )
        workspace_origin_allow(workspace=workspace, origin=settings.PUBLIC_BASE_URL)  # the landing page's pixel
        token = demo_token(workspace, reset=reset)
        base = settings.PUBLIC_BASE_URL
        leads_url = f"{base}/api/v1/campaigns/{campaign.slug}/leads"
        lead = json.dumps({"email": "grace@example.com", "name": "Grace Hopper"})
        self.emit(
            {
                "workspace": workspace.slug,
                "tracking_key": workspace.tracking_key,
                "token": token,
                "link": {"id": link.pk, "key": link.key, "url": f"{base}/l/{link.key}"},
                "campaign": {"slug": campaign.slug, "leads_url": leads_url},
                "try": f"curl -i {base}/l/{link.key}",
                "try_lead": (
                    f"curl -s {leads_url} -H {shlex.quote('Authorization: Bearer ' + token)}"
                    f" -H 'Content-Type: application/json' -d {shlex.quote(lead)}"
                ),
                "admin": demo_owner(workspace, reset=reset),
            }
        )


def _generation(workspace: Workspace) -> int:
    return ApiToken.objects.filter(workspace=workspace, name=DEMO_TOKEN_NAME, revoked_at__isnull=False).count()


def _derived(purpose: str, generation: int) -> str:
    digest = salted_hmac(f"lftrack.demo.{purpose}", str(generation), algorithm="sha256").digest()
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")  # 43 characters


def demo_token(workspace: Workspace, *, reset: bool) -> str:
    """The demo token's secret: the current generation's, created when missing (or revoked in the back office)."""
    active = ApiToken.objects.filter(workspace=workspace, name=DEMO_TOKEN_NAME, revoked_at__isnull=True)
    if reset:
        active.update(revoked_at=timezone.now())
        transaction.on_commit(api_tokens_changed)  # no process may keep accepting it
    secret = TOKEN_PREFIX + _derived("token", _generation(workspace))
    if not active.filter(digest=token_digest(secret)).exists():
        api_token_create(workspace=workspace, name=DEMO_TOKEN_NAME, secret=secret)
    return secret


def demo_owner(workspace: Workspace, *, reset: bool) -> dict:
    """The staff user `demo`, owner of the demo workspace. Its password is set when it is created or on
    --reset, and printed while it is still the one we set."""
    user, created = get_user_model().objects.get_or_create(username=DEMO_USER)
    password = _derived("password", _generation(workspace))[:16]
    if created or reset:
        user.set_password(password)
        user.is_active = True
        user.save()
    membership_set(workspace=workspace, user=user, role=Membership.Role.OWNER)  # also makes them staff
    login = {"url": f"{settings.PUBLIC_BASE_URL}/admin/", "username": DEMO_USER}
    # The newest generation first: a token revoked in the back office moves the generation on, not the password.
    for generation in range(_generation(workspace), max(-1, _generation(workspace) - 10), -1):
        if user.check_password(candidate := _derived("password", generation)[:16]):
            return {**login, "password": candidate}
    return {**login, "password": None, "note": "changed since it was printed; `manage.py demo --reset` sets a new one"}
