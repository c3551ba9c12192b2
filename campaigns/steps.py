"""A sequence step's content: a plain-text body, or Markdown rendered, sanitized and turned into text on save."""

from django.db import transaction

from campaigns.html import MAX_MARKDOWN, markdown_render
from campaigns.models import CampaignEmail
from lftrack.errors import Unprocessable

MAX_BODY = 100_000  # characters of a plain-text body


def step_content(*, body: str, markdown: str) -> dict[str, str]:
    """The stored fields of a step written as `body` (plain text) or `markdown` (which wins when given): for
    Markdown, the sanitized HTML and the plain-text part generated from it (docs/email.md, "HTML emails")."""
    if len(markdown) > MAX_MARKDOWN:
        raise Unprocessable("markdown is too long")
    if markdown.strip():
        rendered = markdown_render(markdown)
        if not rendered.html or not rendered.text:
            raise Unprocessable("markdown has no content once sanitized")
        return {"body": rendered.text, "markdown": markdown, "html": rendered.html}
    if not body:
        raise Unprocessable("body is required")
    if len(body) > MAX_BODY:
        raise Unprocessable("body is too long")
    return {"body": body, "markdown": "", "html": ""}


@transaction.atomic
def campaign_email_edit(*, campaign_email: CampaignEmail, subject: str, body: str, markdown: str) -> CampaignEmail:
    """New text for a step (its schedule is not touched: a live step keeps its delay). Emails already sent keep
    what they said; the next sends use this."""
    if not subject:
        raise Unprocessable("subject is required")
    if len(subject) > 255:
        raise Unprocessable("subject is too long")
    content = step_content(body=body, markdown=markdown)
    CampaignEmail.objects.filter(pk=campaign_email.pk).update(subject=subject, **content)
    campaign_email.subject = subject
    for name, value in content.items():
        setattr(campaign_email, name, value)
    return campaign_email
