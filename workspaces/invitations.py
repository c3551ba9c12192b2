"""Memberships by invitation: an owner names an email address, its person accepts through a signed link.

Nobody joins a workspace without saying yes, and the owner's form answers the same whether an account
exists for the address or not (it never tells who has one here).
"""

from datetime import timedelta

from django.conf import settings
from django.core import signing
from django.core.exceptions import ValidationError
from django.core.mail import send_mail
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.db.models.functions import Lower
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone

from lftrack.errors import BadRequest, Unprocessable
from workspaces.models import Invitation, Membership, Workspace
from workspaces.services import membership_set

INVITE_WITHIN = timedelta(days=7)
_SALT = "lftrack.workspaces.invitation"
INVALID_LINK = "invalid invitation link"


def invitation_url(invitation: Invitation) -> str:
    token = signing.TimestampSigner(salt=_SALT).sign(str(invitation.pk))
    return settings.PUBLIC_BASE_URL + reverse("invitation", args=[token])


def invitation_from_token(token: str) -> Invitation:
    """The pending invitation a link is for; tampered, expired, cancelled or used links raise BadRequest."""
    if not token or len(token) > 200:
        raise BadRequest(INVALID_LINK)
    try:
        pk = int(signing.TimestampSigner(salt=_SALT).unsign(token, max_age=INVITE_WITHIN))
    except (signing.BadSignature, ValueError):
        raise BadRequest(INVALID_LINK) from None
    invitation = (
        Invitation.objects.select_related("workspace")
        .filter(pk=pk, accepted_at__isnull=True, cancelled_at__isnull=True)
        .first()
    )
    if invitation is None:
        raise BadRequest(INVALID_LINK)
    return invitation


@transaction.atomic
def invitation_create(*, workspace: Workspace, email: str, role: str, invited_by) -> Invitation:
    """Invite `email` (a pending invitation to it is sent again) and mail the link after the commit."""
    email = (email or "").strip()
    try:
        validate_email(email)
    except ValidationError:
        raise Unprocessable("invalid email") from None
    if role not in Membership.Role.values:
        raise Unprocessable(f"unknown role: {role}")
    pending = Invitation.objects.filter(workspace=workspace, accepted_at__isnull=True, cancelled_at__isnull=True).alias(
        email_lower=Lower("email")
    )
    invitation = pending.filter(email_lower=email.lower()).first()
    if invitation is None:
        try:
            with transaction.atomic():
                invitation = Invitation.objects.create(
                    workspace=workspace, email=email, role=role, invited_by=invited_by
                )
        except IntegrityError:  # a concurrent invitation of the same address
            invitation = pending.get(email_lower=email.lower())
    elif invitation.role != role:
        invitation.role = role
        invitation.save(update_fields=["role"])
    name = workspace.name or workspace.slug
    url = invitation_url(invitation)
    body = render_to_string(
        "emails/invitation.txt", {"workspace": name, "role": invitation.get_role_display().lower(), "url": url}
    )
    transaction.on_commit(lambda: send_mail(f"You are invited to {name} on lftrack", body, None, [invitation.email]))
    return invitation


def invitation_cancel(*, invitation: Invitation) -> None:
    Invitation.objects.filter(pk=invitation.pk, accepted_at__isnull=True).update(cancelled_at=timezone.now())


@transaction.atomic
def invitation_accept(*, invitation: Invitation, user) -> Membership:
    """The invitee (signed in, or with the account just made) joins with the invited role; once only."""
    if not Invitation.objects.filter(pk=invitation.pk, accepted_at__isnull=True, cancelled_at__isnull=True).update(
        accepted_at=timezone.now()
    ):
        raise BadRequest(INVALID_LINK)
    existing = Membership.objects.filter(workspace=invitation.workspace, user=user).first()
    if existing is not None and existing.role == Membership.Role.OWNER:
        return existing  # an invitation never takes a role away
    return membership_set(workspace=invitation.workspace, user=user, role=invitation.role)
