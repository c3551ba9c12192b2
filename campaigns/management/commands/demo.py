"""`manage.py demo`: a ready-to-try workspace, a fresh token and a tracked link (used by `make run`)."""
import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction

from clicks.models import Link
from clicks.services import link_create
from lftrack.cli import JsonCommand
from workspaces.models import Membership, Workspace
from workspaces.services import api_token_create, membership_set

DEMO_SLUG = "demo"
DEMO_DESTINATION = "https://example.com/welcome?utm_source=lftrack-demo#signup"
DEMO_USER = "demo"


class Command(JsonCommand):
    help = "Create (or reuse) the demo workspace and link, and print a new demo API token."

    def add_arguments(self, parser) -> None:
        pass

    @transaction.atomic
    def handle(self, *args, **options) -> None:
        workspace, _ = Workspace.objects.get_or_create(slug=DEMO_SLUG, defaults={"name": "Demo"})
        link = Link.objects.filter(workspace=workspace).order_by("pk").first()
        if link is None:
            link = link_create(workspace=workspace, destination=DEMO_DESTINATION, post_title="Demo post")
        # Secrets are never stored, so an earlier demo token cannot be shown again: mint a new one.
        issued = api_token_create(workspace=workspace, name="demo")
        base = settings.PUBLIC_BASE_URL
        password = demo_owner_reset(workspace)
        self.emit(
            {
                "workspace": workspace.slug,
                "tracking_key": workspace.tracking_key,
                "token": issued.secret,
                "link": {"id": link.pk, "key": link.key, "url": f"{base}/l/{link.key}"},
                "try": f"curl -i {base}/l/{link.key}",
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
