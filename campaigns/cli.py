"""Command-line lookups of campaigns: an unknown (or another workspace's) slug is a one-line error."""

from django.core.management.base import CommandError

from campaigns.models import Campaign
from campaigns.services import campaign_get
from lftrack.errors import NotFound
from workspaces.models import Workspace


def campaign_from_arg(workspace: Workspace, slug: str) -> Campaign:
    try:
        return campaign_get(workspace=workspace, slug=slug)
    except NotFound:
        raise CommandError(f"unknown campaign: {slug}") from None
