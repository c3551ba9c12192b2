"""Workspaces and their members: creation, roles (a workspace always keeps an owner) and settings."""

import re

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.db import IntegrityError, transaction
from django.db.models import QuerySet

from lftrack.currencies import currency_code
from lftrack.errors import NotFound, Unprocessable
from workspaces.models import RETENTION_MAX_DAYS, Membership, Workspace
from workspaces.origins import allowed_origins_parse
from workspaces.selectors import workspace_by_slug
from workspaces.tokens import workspace_changed

_SLUG_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,99}$")


@transaction.atomic
def workspace_create(*, slug: str, name: str = "", owner_username: str | None = None) -> Workspace:
    if not _SLUG_RE.match(slug):
        raise Unprocessable("slug must be lowercase letters, digits and hyphens")
    owner = None
    if owner_username:
        owner = get_user_model().objects.filter(username=owner_username).first()
        if owner is None:
            raise NotFound(f"unknown user: {owner_username}")
    try:
        with transaction.atomic():
            workspace = Workspace.objects.create(slug=slug, name=name or slug)
    except IntegrityError:
        raise Unprocessable(f"workspace already exists: {slug}") from None
    if owner is not None:
        membership_set(workspace=workspace, user=owner, role=Membership.Role.OWNER)
    return workspace


@transaction.atomic
def membership_set(*, workspace: Workspace, user: User, role: str) -> Membership:
    """Give `user` a role in `workspace`; members are staff so they can use the admin."""
    if role not in Membership.Role.values:
        raise Unprocessable(f"unknown role: {role}")
    if role != Membership.Role.OWNER:
        _keep_an_owner(workspace=workspace, losing=Membership.objects.filter(workspace=workspace, user=user))
    membership, _ = Membership.objects.update_or_create(user=user, workspace=workspace, defaults={"role": role})
    if not user.is_staff:
        user.is_staff = True
        user.save(update_fields=["is_staff"])
    return membership


@transaction.atomic
def membership_remove(*, membership: Membership) -> None:
    """Take a user out of a workspace; the last owner cannot be removed."""
    _keep_an_owner(workspace=membership.workspace, losing=Membership.objects.filter(pk=membership.pk))
    Membership.objects.filter(pk=membership.pk).delete()


def _keep_an_owner(*, workspace: Workspace, losing: QuerySet[Membership]) -> None:
    """Raise when the memberships in `losing` hold the workspace's only owner role."""
    # Lock the workspace row: two owners demoting each other at once must not both succeed.
    Workspace.objects.select_for_update().filter(pk=workspace.pk).first()
    owners = Membership.objects.filter(workspace=workspace, role=Membership.Role.OWNER)
    if owners.exists() and not owners.exclude(pk__in=losing.values("pk")).exists():
        raise Unprocessable("a workspace needs at least one owner")


@transaction.atomic
def workspace_settings_update(
    *,
    workspace: Workspace,
    name: str,
    allowed_origins: str,
    currency: str | None = None,
    link_fallback_url: str | None = None,
) -> Workspace:
    """What an owner may change in Settings: the display name, the pixel's allowed origins, the currency of
    sales that name none (recorded sales keep theirs) and the page a deleted link sends visitors to."""
    name = name.strip()
    if not name:
        raise Unprocessable("name is required")
    workspace.name = name[:200]
    workspace.allowed_origins = "\n".join(allowed_origins_parse(allowed_origins))
    if currency is not None:
        code = currency_code(currency)
        if code is None:
            raise Unprocessable(f"unknown currency: {currency[:10]}")
        workspace.currency = code
    if link_fallback_url is not None:
        workspace.link_fallback_url = link_fallback_url  # checked by the form (an http or https URL) or empty
    workspace.save(update_fields=["name", "allowed_origins", "currency", "link_fallback_url"])
    transaction.on_commit(workspace_changed)  # the processes' token copies carry the workspace's row
    return workspace


_BRAND_COLOR_RE = re.compile(r"^#[0-9a-fA-F]{6}$")


def email_layout_clean(*, logo_url: str, brand_color: str, postal_address: str) -> dict[str, str]:
    """The HTML emails' layout fields (docs/email.md, "The layout") as stored: an https logo URL or none, a
    `#rrggbb` colour, the postal address for the footer (CAN-SPAM). Raises Unprocessable."""
    logo_url, postal_address = logo_url.strip(), postal_address.strip()
    if logo_url:
        if len(logo_url) > 2048:
            raise Unprocessable("logo URL is too long")
        try:
            URLValidator(schemes=["https"])(logo_url)
        except ValidationError:
            raise Unprocessable("logo URL must be an https URL") from None
    if not _BRAND_COLOR_RE.match(brand_color):
        raise Unprocessable("brand colour must be #rrggbb")
    if len(postal_address) > 500:
        raise Unprocessable("postal address is too long")
    return {"email_logo_url": logo_url, "email_brand_color": brand_color.lower(), "postal_address": postal_address}


def workspace_email_layout_set(
    *, workspace: Workspace, logo_url: str, brand_color: str, postal_address: str
) -> Workspace:
    fields = email_layout_clean(logo_url=logo_url, brand_color=brand_color, postal_address=postal_address)
    for name, value in fields.items():
        setattr(workspace, name, value)
    workspace.save(update_fields=list(fields))
    return workspace


def workspace_retention_set(*, workspace: Workspace, days: int | None) -> Workspace:
    """How many days the workspace keeps its clicks and conversions (None: forever); older ones are purged by the
    worker, their numbers kept in the roll-ups (docs/privacy.md, "Retention")."""
    if days is not None and not 1 <= days <= RETENTION_MAX_DAYS:
        raise Unprocessable(f"retention must be 1 to {RETENTION_MAX_DAYS} days, or forever")
    workspace.retention_days = days
    workspace.save(update_fields=["retention_days"])
    return workspace


def workspace_get(*, slug: str) -> Workspace:
    workspace = workspace_by_slug(slug=slug)
    if workspace is None:
        raise NotFound(f"unknown workspace: {slug}")
    return workspace
