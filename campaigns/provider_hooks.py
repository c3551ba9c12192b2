"""Bounces and complaints straight from the email provider, through django-anymail's webhook parsers.

Each workspace has one credential (`manage.py email_hooks create WORKSPACE`): the provider calls
`https://<slug>:<secret>@<host>/hooks/email/<provider>` (HTTP basic auth, as anymail secures webhooks),
and a provider that signs its calls (Mailgun) is checked against the key the owner gave us. Anymail
validates and parses the call; a hard bounce and a complaint then go through the same rules as
POST /api/v1/email-events (campaigns/complaints.py). Everything else a provider reports (deliveries,
opens, soft bounces, its spam filters' refusals) is acknowledged and ignored.
"""

import hashlib
import json
import logging
import re
import secrets
import time
import urllib.parse
import urllib.request
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from anymail.exceptions import AnymailNotSupportedWarning, AnymailWebhookValidationFailure
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
from django.core.cache import cache
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction
from django.utils.crypto import constant_time_compare

from campaigns.complaints import email_event_record
from campaigns.models import ProviderHook
from lftrack.errors import BadRequest, ServiceError, Unprocessable
from workspaces.models import Workspace

logger = logging.getLogger("lftrack.sender")
# Anymail keeps SendGrid's parser but no longer tests it against SendGrid (its issue 432); our recorded
# payloads do, so the warning it gives on every call is noise here (pyproject.toml says so to pytest).
warnings.filterwarnings("ignore", category=AnymailNotSupportedWarning)

Kind = str | None  # "bounce", "complaint", or None for an event that suppresses nobody


def _by_anymail(hard_bounce: Callable[[dict], bool] = lambda raw: True) -> Callable[[AnymailTrackingEvent], Kind]:
    """Anymail's `complained`, and its `bounced` where the raw event says the bounce is hard (some
    providers put soft bounces there too)."""

    def kind(event: AnymailTrackingEvent) -> Kind:
        if event.event_type == EventType.COMPLAINED:
            return "complaint"
        raw = event.esp_event if isinstance(event.esp_event, dict) else {}
        if event.event_type == EventType.BOUNCED and hard_bounce(raw):
            return "bounce"
        return None

    return kind


def _postmark(event: AnymailTrackingEvent) -> Kind:
    # Anymail calls Postmark's SpamNotification (a receiving spam filter's refusal, no person) a complaint
    # and BadEmailAddress (permanently invalid) a rejection: Postmark's own Type decides here.
    raw = event.esp_event if isinstance(event.esp_event, dict) else {}
    return {"SpamComplaint": "complaint", "HardBounce": "bounce", "BadEmailAddress": "bounce"}.get(raw.get("Type"))


def _sparkpost_hard(raw: dict) -> bool:
    events = list((raw.get("msys") or {}).values())
    return bool(events) and str(events[0].get("bounce_class")) in ("10", "30")  # invalid recipient, no RCPT


@dataclass(frozen=True)
class Provider:
    view: type
    kind: Callable[[AnymailTrackingEvent], Kind]
    signing_key: str | None = None  # the anymail setting that takes the workspace's key, if it signs


# The providers with recorded payloads in tests/campaigns/test_provider_hooks.py; another of anymail's is
# one line here and its payloads there.
PROVIDERS = {
    "amazon_ses": Provider(
        AmazonSESTrackingWebhookView,
        _by_anymail(lambda raw: (raw.get("bounce") or {}).get("bounceType") == "Permanent"),
    ),
    "brevo": Provider(
        BrevoTrackingWebhookView, _by_anymail(lambda raw: raw.get("event") in ("hard_bounce", "invalid_email"))
    ),
    # Mailgun's temporary failures are anymail's `deferred`, not `bounced`.
    "mailgun": Provider(MailgunTrackingWebhookView, _by_anymail(), signing_key="webhook_signing_key"),
    "mailjet": Provider(MailjetTrackingWebhookView, _by_anymail(lambda raw: raw.get("hard_bounce") is True)),
    "postmark": Provider(PostmarkTrackingWebhookView, _postmark),
    "sendgrid": Provider(SendGridTrackingWebhookView, _by_anymail(lambda raw: raw.get("type", "bounce") == "bounce")),
    "sparkpost": Provider(SparkPostTrackingWebhookView, _by_anymail(_sparkpost_hard)),
}
_SLUG = re.compile(r"^[a-z0-9][a-z0-9-]{0,99}$")
_SIGNING_KEY = re.compile(r"^[\x21-\x7e]{1,200}$")  # printable ASCII: HMAC keys as dashboards show them
SIGNATURE_MAX_AGE = 15 * 60  # seconds: an older Mailgun signature is a replay (Mailgun's own advice)


class Unauthorized(ServiceError):
    status_code = 401


class BadGateway(ServiceError):
    status_code = 502


@transaction.atomic
def provider_hook_create(*, workspace: Workspace, signing_keys: dict[str, str]) -> tuple[ProviderHook, str]:
    """A new secret for the workspace's provider webhooks (the previous one stops working), shown once.
    Signing keys given replace those of the same providers; the others are kept."""
    unknown = sorted(set(signing_keys) - {name for name, p in PROVIDERS.items() if p.signing_key})
    if unknown:
        raise Unprocessable(f"no signing key is taken for: {', '.join(unknown)}")
    if not all(_SIGNING_KEY.match(key) for key in signing_keys.values()):
        raise Unprocessable("a signing key is printable ASCII without spaces, as the provider shows it")
    hook = ProviderHook.objects.select_for_update().filter(workspace=workspace).first()
    secret = secrets.token_urlsafe(32)
    if hook is None:
        hook = ProviderHook.objects.create(workspace=workspace, digest=_digest(secret), signing_keys=signing_keys)
    else:
        hook.digest, hook.signing_keys = _digest(secret), {**hook.signing_keys, **signing_keys}
        hook.save(update_fields=["digest", "signing_keys"])
    return hook, secret


def provider_hook_urls(*, workspace: Workspace, secret: str) -> dict[str, str]:
    scheme, _, host = settings.PUBLIC_BASE_URL.partition("://")
    return {name: f"{scheme}://{workspace.slug}:{secret}@{host}/hooks/email/{name}" for name in PROVIDERS}


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def provider_hook_authenticate(request) -> ProviderHook:
    """The hook of the workspace named by the basic-auth user, if the password is its secret.

    One query whether or not the workspace exists, and the digests compared even without a hook, so
    the answer's time does not tell which workspaces exist or have one."""
    slug, _, secret = (get_request_basic_auth(request) or "").partition(":")
    hook = None
    if _SLUG.match(slug) and secret:
        hook = ProviderHook.objects.select_related("workspace").filter(workspace__slug=slug).first()
    if not constant_time_compare(_digest(secret), hook.digest if hook else "0" * 64) or hook is None:
        raise Unauthorized("unauthorized")
    return hook


def provider_events_record(*, request, provider: str, hook: ProviderHook) -> dict[str, int]:
    """Validate and parse the provider's call with anymail; record its hard bounces and complaints."""
    spec = PROVIDERS[provider]
    # The credentials we have just checked, so anymail's own check passes; SNS subscriptions are ours.
    options = {"webhook_secret": [get_request_basic_auth(request)], "auto_confirm_sns_subscriptions": False}
    if spec.signing_key and hook.signing_keys.get(provider):
        options[spec.signing_key] = hook.signing_keys[provider]
    try:
        view = spec.view(**options)
    except ImproperlyConfigured:
        raise Unprocessable(f"no {provider} signing key for this workspace: manage.py email_hooks create") from None
    try:
        view.run_validators(request)
        if provider == "mailgun":
            _mailgun_fresh(request)
        if provider == "amazon_ses" and request.META.get("HTTP_X_AMZ_SNS_MESSAGE_TYPE") == "SubscriptionConfirmation":
            return _sns_subscription_confirm(request, hook)
        events = view.parse_events(request)
    except AnymailWebhookValidationFailure:
        raise Unauthorized("invalid signature") from None
    except ServiceError:
        raise
    except Exception:
        # (malformed or too deeply nested JSON, an inbound payload posted to the tracking hook, ...).
        raise BadRequest("invalid payload") from None
    recorded = 0
    for event in events:
        kind = spec.kind(event)
        if kind is None or not isinstance(event.recipient, str):
            continue
        try:
            email_event_record(
                workspace=hook.workspace,
                event_type=kind,
                email=event.recipient,
                message_ids=tuple(_message_ids(event)),
                channel="provider",
            )
        except Unprocessable:  # no usable address in this event: nothing to suppress
            continue
        recorded += 1
    return {"events": len(events), "suppressed": recorded}


def _mailgun_fresh(request) -> None:
    """Mailgun signs only a timestamp and a token: refuse old signatures and a token seen before."""
    try:
        signature = (
            json.loads(request.body)["signature"] if request.content_type == "application/json" else request.POST
        )
        timestamp, token = int(signature["timestamp"]), str(signature["token"])
    except (ValueError, KeyError, TypeError):
        raise AnymailWebhookValidationFailure("unsigned") from None
    if abs(time.time() - timestamp) > SIGNATURE_MAX_AGE:
        raise AnymailWebhookValidationFailure("stale signature")
    try:
        fresh = cache.add(f"mailgun-token:{hashlib.sha256(token.encode()).hexdigest()}", 1, 2 * SIGNATURE_MAX_AGE)
    except Exception:
        fresh = True
    if not fresh:
        raise AnymailWebhookValidationFailure("replayed signature")


_SNS_HOST = re.compile(r"^sns\.[a-z0-9-]+\.amazonaws\.com(\.cn)?$")


def _sns_subscription_confirm(request, hook: ProviderHook) -> dict[str, int]:
    """Amazon SNS asks once to confirm the subscription that posts here: the secret in the URL proves the
    topic is the workspace's, and visiting its SubscribeURL (an https address of SNS itself) confirms it."""
    try:
        url = json.loads(request.body)["SubscribeURL"]
        parts = urllib.parse.urlsplit(url)
    except (ValueError, KeyError, TypeError):
        raise BadRequest("invalid payload") from None
    if parts.scheme != "https" or not _SNS_HOST.match(parts.hostname or ""):
        raise BadRequest("invalid payload")
    try:
        sns_fetch(url)
    except OSError as error:
        logger.warning(
            "SNS subscription not confirmed (%s)", type(error).__name__, extra={"workspace_id": hook.workspace_id}
        )
        raise BadGateway("could not confirm the subscription with Amazon SNS") from None
    return {"events": 0, "suppressed": 0}


def sns_fetch(url: str) -> None:
    with urllib.request.urlopen(url, timeout=5) as response:
        response.read(64 * 1024)


_MESSAGE_ID_KEYS = {"messageid", "message-id", "message_id", "smtp-id"}
_MESSAGE_ID_MAX = 998


def _message_ids(event: AnymailTrackingEvent) -> Iterator[str]:
    """The Message-ID-like values of the event (SES's commonHeaders.messageId, SendGrid's smtp-id, Brevo's
    message-id, Mailgun's headers): strings with an @, no NUL, of a header's length, ten at most."""
    found = 0
    stack = [event.message_id, event.esp_event]
    while stack and found < 10:
        node = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                if (isinstance(value, str) and key.lower() in _MESSAGE_ID_KEYS) or isinstance(value, dict | list):
                    stack.append(value)
        elif isinstance(node, list):  # of objects: a list of strings holds addresses, not message ids
            stack.extend(item for item in node if isinstance(item, dict | list))
        elif isinstance(node, str) and "@" in node and "\x00" not in node and len(node) <= _MESSAGE_ID_MAX:
            found += 1
            yield node
