"""One sequence step as an email: placeholders filled without a template engine, RFC 8058 unsubscribe headers, the
workspace's HTML layout around an HTML step."""

import re
from urllib.parse import urlsplit

from django.conf import settings
from django.core.mail import EmailMessage, EmailMultiAlternatives
from django.core.mail.message import make_msgid
from django.template.loader import render_to_string
from django.utils.safestring import mark_safe

# Only these two placeholders exist. Subjects and bodies are written by users, so they never go
# through Django's template engine: `{% load %}`, `{% include %}` or `{{ settings.SECRET_KEY }}`-style
# lookups stay plain text. One regex pass, so a name that itself reads "{{ email }}" stays literal.
PLACEHOLDER_RE = re.compile(r"\{\{\s*(name|email)\s*\}\}")
# Control characters (CR and LF above all) in a contact's name would break headers or forge lines.
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")


def placeholder_values(*, name: str, email: str) -> dict[str, str]:
    return {"name": _CONTROL_RE.sub(" ", name).strip(), "email": _CONTROL_RE.sub("", email)}


def placeholders_fill(text: str, *, name: str, email: str) -> str:
    values = placeholder_values(name=name, email=email)
    return PLACEHOLDER_RE.sub(lambda match: values[match.group(1)], text)


def subject_render(subject: str, *, name: str, email: str) -> str:
    """A header: one line, whatever the step's author or the contact's name hold."""
    return _CONTROL_RE.sub(" ", placeholders_fill(subject, name=name, email=email)).strip()


def body_render(body: str, *, name: str, email: str, unsubscribe_url: str) -> str:
    text = placeholders_fill(body, name=name, email=email).rstrip()
    # CAN-SPAM and Gmail's bulk-sender rules want a visible way out besides the header.
    return f"{text}\n\n-- \nUnsubscribe: {unsubscribe_url}\n"


def _message_id_domain() -> str:
    # Our own public host, so ids are globally unique and say who sent them; never a DNS lookup per email.
    return urlsplit(settings.PUBLIC_BASE_URL).hostname or "localhost"


def message_id_new() -> str:
    """`<time.pid.random@host>`: stored on the EmailSend before the send, so a provider's event can find it."""
    return make_msgid(domain=_message_id_domain())


def layout_render(*, workspace, subject: str, html: str, unsubscribe_url: str) -> str:
    """The workspace's layout (templates/emails/layout.html) around a step's HTML, sanitized on save and filled
    for its recipient (campaigns/html.py); only our template goes through the template engine, never their text."""
    return render_to_string(
        "emails/layout.html",
        {
            "subject": subject,
            "content": mark_safe(html),  # sanitized when the step was saved; placeholders filled escaped
            "workspace_name": workspace.name,
            "logo_url": workspace.email_logo_url,
            "brand_color": workspace.email_brand_color,
            "postal_address": workspace.postal_address,
            "unsubscribe_url": unsubscribe_url,
        },
    )


def step_message(
    *,
    subject: str,
    body: str,
    name: str,
    email: str,
    message_id: str,
    unsubscribe_url: str,
    html: str = "",
    workspace=None,
    headers: dict[str, str] | None = None,
) -> EmailMessage:
    """The email of one step to one contact, with List-Unsubscribe and one-click POST: plain text, or, for a step
    with `html` (its links already rewritten and placeholders filled), text and HTML in the workspace's layout."""
    subject = subject_render(subject, name=name, email=email)
    message = EmailMultiAlternatives(
        subject=subject,
        body=body_render(body, name=name, email=email, unsubscribe_url=unsubscribe_url),
        from_email=settings.DEFAULT_FROM_EMAIL,
        to=[email],
        headers={
            "Message-ID": message_id,
            "List-Unsubscribe": f"<{unsubscribe_url}>",
            "List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
            **(headers or {}),
        },
    )
    if html:
        message.attach_alternative(
            layout_render(workspace=workspace, subject=subject, html=html, unsubscribe_url=unsubscribe_url),
            "text/html",
        )
    return message
