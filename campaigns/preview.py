"""An email (a sequence step or a broadcast) as one contact would read it: the back office's preview, and "Send me a
test" through the real sender."""

from dataclasses import dataclass
from typing import Protocol

from django.core.mail import EmailMessage

from campaigns.html import html_placeholders_fill
from campaigns.mail import body_render, layout_render, message_id_new, step_message, subject_render
from campaigns.smtp import Mailer, deliver
from campaigns.unsubscribe import unsubscribe_url
from lftrack.errors import Unprocessable
from workspaces.models import Workspace

TEST_PREFIX = "[Test] "
TEST_HEADER = "X-Lftrack-Test"  # "yes" on a test send: nothing was recorded, its links are not tracked


class Content(Protocol):
    """What is previewed: a CampaignEmail or a Broadcast (both written by campaigns/steps.py's step_content)."""

    @property
    def subject(self) -> str: ...
    @property
    def body(self) -> str: ...
    @property
    def html(self) -> str: ...  # empty for a plain-text email
    @property
    def workspace(self) -> Workspace: ...
    @property
    def workspace_id(self) -> int: ...


@dataclass
class Preview:
    subject: str
    html: str  # the whole HTML document in the workspace's layout; empty for a plain-text email
    text: str


def content_preview(*, content: Content, name: str, email: str) -> Preview:
    """What `content` looks like for a contact called `name` at `email`: links as written (a preview records
    nothing, so it makes no tracked link), the unsubscribe link a real one for that address."""
    unsubscribe = unsubscribe_url(workspace_id=content.workspace_id, email=email)
    subject = subject_render(content.subject, name=name, email=email)
    html = ""
    if content.html:
        filled = html_placeholders_fill(content.html, name=name, email=email)
        html = layout_render(workspace=content.workspace, subject=subject, html=filled, unsubscribe_url=unsubscribe)
    return Preview(
        subject=subject, html=html, text=body_render(content.body, name=name, email=email, unsubscribe_url=unsubscribe)
    )


def content_test_send(*, content: Content, name: str, email: str, to: str) -> None:
    """Mail `content`, filled for `name` and `email`, to `to` (the signed-in user) through the sender's own SMTP
    hand-over (campaigns/smtp.py): subject prefixed "[Test] ", header X-Lftrack-Test. Nothing is recorded: no
    EmailSend or BroadcastRecipient, no tracked link, no number moves. Raises Unprocessable with the server's
    answer when it fails."""
    if not to:
        raise Unprocessable("your account has no email address")

    def message(_: str) -> EmailMessage:
        built = step_message(
            subject=content.subject,
            body=content.body,
            html=html_placeholders_fill(content.html, name=name, email=email) if content.html else "",
            workspace=content.workspace,
            name=name,
            email=email,
            message_id=message_id_new(),
            unsubscribe_url=unsubscribe_url(workspace_id=content.workspace_id, email=to),
            headers={TEST_HEADER: "yes"},
        )
        built.subject, built.to = TEST_PREFIX + built.subject, [to]  # filled for the contact, mailed to the user
        return built

    mailer = Mailer()
    try:
        delivery = deliver([to], message, mailer)
    finally:
        mailer.close()
    if not delivery.accepted:
        problems = [error for _, error, _ in [*delivery.failed, *delivery.bounced]]
        raise Unprocessable(f"test not sent: {(problems or [delivery.error or 'the server refused it for now'])[0]}")
