"""`manage.py campaign create|add-email|activate-email|enroll|stop|pause|resume` (docs/cli.md, "Campaigns")."""

from django.core.management.base import CommandError

from campaigns.api import enrollment_out, lead_out
from campaigns.cli import campaign_from_arg
from campaigns.models import Campaign, CampaignEmail
from campaigns.selectors import enrollment_by_email
from campaigns.services import (
    campaign_create,
    campaign_email_activate,
    campaign_email_add,
    campaign_lead_add,
    campaign_pause,
    campaign_resume,
    enrollment_stop,
)
from lftrack.cli import JsonCommand
from lftrack.fields import iso_utc
from workspaces.cli import workspace_from_arg


def _step_out(email: CampaignEmail) -> dict:
    return {"id": email.pk, "position": email.position, "active": email.active}


class Command(JsonCommand):
    help = "Manage campaigns: create one, add and activate sequence emails, enroll or stop an address, pause and resume sending."

    def add_actions(self, sub) -> None:
        create = sub.add_parser("create", help="Create a campaign.")
        create.add_argument("workspace")
        create.add_argument("slug")
        create.add_argument("--name", default="")

        add = sub.add_parser("add-email", help="Append an email to the campaign's sequence.")
        add.add_argument("workspace")
        add.add_argument("slug")
        add.add_argument("--subject", required=True)
        text = add.add_mutually_exclusive_group(required=True)
        text.add_argument("--body", help="a plain-text email")
        text.add_argument("--markdown", help='an HTML email written in Markdown (docs/email.md, "HTML emails")')
        add.add_argument(
            "--delay-minutes", type=int, required=True, help="counted from enrollment or the previous send"
        )
        add.add_argument("--inactive", action="store_true", help="add it switched off; activate-email turns it on")

        activate = sub.add_parser("activate-email", help="Switch a sequence email on and schedule who waits for it.")
        activate.add_argument("workspace")
        activate.add_argument("slug")
        activate.add_argument("position", type=int, help="the step's position in the sequence (1, 2, ...)")

        enroll = sub.add_parser(
            "enroll", help="Enroll an address, as POST /campaigns/<slug>/leads does (single opt-in)."
        )
        enroll.add_argument("workspace")
        enroll.add_argument("slug")
        enroll.add_argument("email")
        enroll.add_argument("--name", default="", help="replaces the contact's name, as the API's does")

        stop = sub.add_parser("stop", help="Stop an address's enrollment in the campaign.")
        stop.add_argument("workspace")
        stop.add_argument("slug")
        stop.add_argument("email")

        for action, text in (
            ("pause", "Hold the campaign's due emails (complaints pause a campaign by themselves)."),
            ("resume", "Send a paused campaign's emails again; those that fell due go out on the next pass."),
        ):
            parser = sub.add_parser(action, help=text)
            parser.add_argument("workspace")
            parser.add_argument("slug")

    def do_create(self, *, workspace: str, slug: str, name: str, **_) -> dict:
        campaign = campaign_create(workspace=workspace_from_arg(workspace), slug=slug, name=name)
        return {"id": campaign.pk, "slug": campaign.slug}

    def do_add_email(
        self,
        *,
        workspace: str,
        slug: str,
        subject: str,
        body: str | None,
        markdown: str | None,
        delay_minutes: int,
        inactive: bool,
        **_,
    ) -> dict:
        campaign = campaign_from_arg(workspace_from_arg(workspace), slug)
        email = campaign_email_add(
            campaign=campaign,
            subject=subject,
            body=body or "",
            markdown=markdown or "",
            delay_minutes=delay_minutes,
            active=not inactive,
        )
        return _step_out(email)

    def do_activate_email(self, *, workspace: str, slug: str, position: int, **_) -> dict:
        campaign = campaign_from_arg(workspace_from_arg(workspace), slug)
        email = CampaignEmail.objects.filter(campaign=campaign, position=position).first()
        if email is None:
            raise CommandError(f"no email at position {position} in {slug}")
        was_active = email.active
        return {**_step_out(campaign_email_activate(campaign_email=email)), "already_active": was_active}

    def do_enroll(self, *, workspace: str, slug: str, email: str, name: str, **_) -> dict:
        campaign = campaign_from_arg(workspace_from_arg(workspace), slug)
        return lead_out(campaign_lead_add(campaign=campaign, email=email, name=name, channel="manual"))

    def do_stop(self, *, workspace: str, slug: str, email: str, **_) -> dict:
        campaign = campaign_from_arg(workspace_from_arg(workspace), slug)
        enrollment = enrollment_by_email(campaign=campaign, email=email)
        if enrollment is None:
            raise CommandError(f"not enrolled: {email}")
        return {"enrollment": enrollment_out(enrollment_stop(enrollment=enrollment))}

    def do_pause(self, *, workspace: str, slug: str, **_) -> dict:
        return _status_out(campaign_pause(campaign=campaign_from_arg(workspace_from_arg(workspace), slug)))

    def do_resume(self, *, workspace: str, slug: str, **_) -> dict:
        return _status_out(campaign_resume(campaign=campaign_from_arg(workspace_from_arg(workspace), slug)))


def _status_out(campaign: Campaign) -> dict:
    return {
        "id": campaign.pk,
        "slug": campaign.slug,
        "status": campaign.status,
        "paused_at": iso_utc(campaign.paused_at) if campaign.paused_at else None,
    }
