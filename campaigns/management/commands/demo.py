"""`manage.py demo`: a ready-to-try workspace, a fresh token and a tracked link (used by `make run`)."""
from django.conf import settings
from django.db import transaction

from clicks.models import Link
from clicks.services import link_create
from lftrack.cli import JsonCommand
from workspaces.models import Workspace
from workspaces.services import api_token_create, workspace_origin_allow

DEMO_SLUG = "demo"
# The demo landing page (DEBUG only) on our own address: it carries the pixel.
DEMO_LANDING = "/demo/landing?utm_source=lftrack-demo#signup"


class Command(JsonCommand):
    help = "Create (or reuse) the demo workspace and link, and print a new demo API token."

    def add_arguments(self, parser) -> None:
        pass

    @transaction.atomic
    def handle(self, *args, **options) -> None:
        workspace, _ = Workspace.objects.get_or_create(slug=DEMO_SLUG, defaults={"name": "Demo"})
        destination = settings.PUBLIC_BASE_URL + DEMO_LANDING
        link = Link.objects.filter(workspace=workspace, destination=destination).order_by("pk").first()
        if link is None:
            link = link_create(workspace=workspace, destination=destination, post_title="Demo post")
        workspace_origin_allow(workspace=workspace, origin=settings.PUBLIC_BASE_URL)  # the landing page's pixel
        # Secrets are never stored, so an earlier demo token cannot be shown again: mint a new one.
        issued = api_token_create(workspace=workspace, name="demo")
        base = settings.PUBLIC_BASE_URL
        self.emit(
            {
                "workspace": workspace.slug,
                "tracking_key": workspace.tracking_key,
                "token": issued.secret,
                "link": {"id": link.pk, "key": link.key, "url": f"{base}/l/{link.key}"},
                "try": f"curl -i {base}/l/{link.key}",
            }
        )
