"""Bounces and complaints straight from the email provider, through django-anymail's webhook parsers.

Each workspace has one credential (`manage.py email-hook create WORKSPACE`): the provider calls
`https://<slug>:<secret>@<host>/hooks/email/<provider>` (HTTP basic auth, as anymail secures webhooks),
and a provider that signs its calls (Mailgun) is checked against the key the owner gave us. Anymail
validates and parses the call; a hard bounce and a complaint then go through the same rules as
POST /api/v1/email-events (campaigns/complaints.py). Everything else a provider reports (deliveries,
opens, soft bounces) is acknowledged and ignored.
"""
import hashlib
import secrets
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from anymail.exceptions import AnymailError, AnymailNotSupportedWarning, AnymailWebhookValidationFailure
from anymail.signals import AnymailTrackingEvent, EventType
from anymail.utils import get_request_basic_auth
from anymail.webhooks.amazon_ses import AmazonSESTrackingWebhookView
from anymail.webhooks.brevo import BrevoTrackingWebhookView
from anymail.webhooks.mailgun import MailgunTrackingWebhookView
from anymail.webhooks.mailjet import MailjetTrackingWebhookView
from anymail.webhooks.postmark import PostmarkTrackingWebhookView
from anymail.webhooks.sendgrid import SendGridTrackingWebhookView
from anymail.webhooks.sparkpost import SparkPostTrackingWebhookView
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction
from django.utils.crypto import constant_time_compare

from campaigns.complaints import email_event_record
from campaigns.models import ProviderHook
from lftrack.errors import BadRequest, ServiceError, Unprocessable
from workspaces.models import Workspace
from workspaces.selectors import workspace_by_slug

# Anymail keeps SendGrid's parser but no longer tests it against SendGrid (its issue 432); our recorded
# payloads do, so the warning it gives on every call is noise here (pyproject.toml says so to pytest).
warnings.filterwarnings("ignore", category=AnymailNotSupportedWarning)


def _always(raw) -> bool:
    return True


@dataclass(frozen=True)
class Provider:
    view: type
    # Anymail's `bounced` also holds soft bounces for some providers: whether this raw event is a hard one.
    hard_bounce: Callable[[Any], bool] = _always
    signing_key: str | None = None  # the anymail setting that takes the workspace's key, if it signs


def _sparkpost_hard(raw) -> bool:
    events = list((raw.get("msys") or {}).values())
    return bool(events) and str(events[0].get("bounce_class")) in ("10", "30")  # invalid recipient, no RCPT


# The providers with recorded payloads in tests/campaigns/test_provider_hooks.py; another of anymail's is
# one line here and its payloads there.
PROVIDERS = {
    "amazon_ses": Provider(
        AmazonSESTrackingWebhookView, hard_bounce=lambda raw: (raw.get("bounce") or {}).get("bounceType") == "Permanent"
    ),
    "brevo": Provider(BrevoTrackingWebhookView, hard_bounce=lambda raw: raw.get("event") in ("hard_bounce", "invalid_email")),
    "mailgun": Provider(MailgunTrackingWebhookView, signing_key="webhook_signing_key"),  # temporary ones are `deferred`
    "mailjet": Provider(MailjetTrackingWebhookView, hard_bounce=lambda raw: raw.get("hard_bounce") is True),
    "postmark": Provider(PostmarkTrackingWebhookView, hard_bounce=lambda raw: raw.get("Type") == "HardBounce"),
    "sendgrid": Provider(SendGridTrackingWebhookView, hard_bounce=lambda raw: raw.get("type", "bounce") == "bounce"),
    "sparkpost": Provider(SparkPostTrackingWebhookView, hard_bounce=_sparkpost_hard),
}


class Unauthorized(ServiceError):
    status_code = 401


@transaction.atomic
def provider_hook_create(*, workspace: Workspace, signing_keys: dict[str, str]) -> tuple[ProviderHook, str]:
    """A new secret for the workspace's provider webhooks (the previous one stops working), shown once."""
    unknown = sorted(set(signing_keys) - {name for name, p in PROVIDERS.items() if p.signing_key})
    if unknown:
        raise Unprocessable(f"no signing key is taken for: {', '.join(unknown)}")
    secret = secrets.token_urlsafe(32)
    hook, _ = ProviderHook.objects.update_or_create(
        workspace=workspace, defaults={"digest": _digest(secret), "signing_keys": signing_keys}
    )
    return hook, secret


def provider_hook_urls(*, workspace: Workspace, secret: str) -> dict[str, str]:
    scheme, _, host = settings.PUBLIC_BASE_URL.partition("://")
    return {name: f"{scheme}://{workspace.slug}:{secret}@{host}/hooks/email/{name}" for name in PROVIDERS}


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def provider_hook_authenticate(request) -> ProviderHook:
    """The hook of the workspace named by the basic-auth user, if the password is its secret."""
    slug, _, secret = (get_request_basic_auth(request) or "").partition(":")
    workspace = workspace_by_slug(slug=slug) if slug and secret else None
    hook = ProviderHook.objects.filter(workspace=workspace).select_related("workspace").first() if workspace else None
    # Compared even without a hook, so the answer's time does not tell which workspaces have one.
    if not constant_time_compare(_digest(secret), hook.digest if hook else "0" * 64) or hook is None:
        raise Unauthorized("unauthorized")
    return hook


def provider_events_record(*, request, provider: str, hook: ProviderHook) -> dict[str, int]:
    """Validate and parse the provider's call with anymail; record its hard bounces and complaints."""
    spec = PROVIDERS[provider]
    options = {"webhook_secret": [get_request_basic_auth(request)]}  # the credentials we have just checked
    if spec.signing_key:
        options[spec.signing_key] = hook.signing_keys.get(provider)
    try:
        view = spec.view(**{k: v for k, v in options.items() if v is not None})
    except ImproperlyConfigured:
        raise Unprocessable(f"no {provider} signing key for this workspace: manage.py email-hook create") from None
    try:
        view.run_validators(request)
        events = view.parse_events(request)
    except AnymailWebhookValidationFailure:
        raise Unauthorized("invalid signature") from None
    except (AnymailError, ValueError, KeyError, TypeError, AttributeError):
        raise BadRequest("invalid payload") from None
    recorded = 0
    for event_type, event in _suppressing(provider, events):
        try:
            email_event_record(
                workspace=hook.workspace, event_type=event_type, email=event.recipient or "",
                message_ids=tuple(_message_ids(event)), channel="provider",
            )
        except Unprocessable:  # no usable address in this event: nothing to suppress
            continue
        recorded += 1
    return {"events": len(events), "suppressed": recorded}


def _suppressing(provider: str, events: list[AnymailTrackingEvent]) -> Iterator[tuple[str, AnymailTrackingEvent]]:
    for event in events:
        if event.event_type == EventType.COMPLAINED:
            yield "complaint", event
        elif event.event_type == EventType.BOUNCED and PROVIDERS[provider].hard_bounce(event.esp_event):
            yield "bounce", event


_MESSAGE_ID_KEYS = {"messageid", "message-id", "message_id", "smtp-id"}


def _message_ids(event: AnymailTrackingEvent) -> Iterator[str]:
    """The provider's message id, and every Message-ID-like value of its raw event (SES's
    commonHeaders.messageId, SendGrid's smtp-id, Brevo's message-id, Mailgun's headers)."""
    yield str(event.message_id or "")
    stack = [event.esp_event]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                if isinstance(value, str) and key.lower() in _MESSAGE_ID_KEYS and "@" in value:
                    yield value
                elif isinstance(value, dict | list):
                    stack.append(value)
        elif isinstance(node, list):
            stack.extend(node)
