"""The senders' outgoing email, a sequence step's or a broadcast's: its tracked links, and the message to one contact."""

import logging
from collections.abc import Iterable

from django.core.mail import EmailMessage

from campaigns.html import html_placeholders_fill
from campaigns.mail import step_message
from campaigns.models import Broadcast, CampaignEmail
from campaigns.tracking import broadcast_links_ensure, email_links_ensure, links_track
from campaigns.unsubscribe import unsubscribe_url
from customers.models import Customer
from workspaces.models import Workspace

logger = logging.getLogger("lftrack.sender")


def batch_links(contents: Iterable[CampaignEmail] | Iterable[Broadcast]) -> dict[int, dict[str, str]]:
    """{pk: tracked links} of each step (or broadcast) of a batch, made once each (created on its first send). One
    whose links cannot be made goes out with its links as written: one line says so, and the batch is not held
    (its rows are reserved already)."""
    links: dict[int, dict[str, str]] = {}
    for content in contents:
        if content.pk in links:
            continue
        try:
            if isinstance(content, Broadcast):
                links[content.pk] = broadcast_links_ensure(content)
            else:
                links[content.pk] = email_links_ensure(content)
        except Exception as exc:
            links[content.pk] = {}
            id_name = "broadcast_id" if isinstance(content, Broadcast) else "campaign_email_id"
            logger.error("links not tracked", extra={id_name: content.pk, "error": type(exc).__name__})
    return links


def outgoing_message(
    *,
    content: CampaignEmail | Broadcast,
    customer: Customer,
    links: dict[str, str],
    workspace: Workspace | None,
    workspace_id: int,
    message_id: str,
    send_id: int | None = None,
    broadcast_recipient_id: int | None = None,
) -> EmailMessage:
    """The step's (or broadcast's) email to the contact, built after its reservation committed (no lock held
    meanwhile): its links through our redirect, signed for this send or broadcast recipient (docs/email.md,
    "Tracked links")."""
    html, body = links_track(
        html=content.html, text=content.body, keys=links, send_id=send_id, broadcast_recipient_id=broadcast_recipient_id
    )
    return step_message(
        subject=content.subject,
        body=body,
        html=html_placeholders_fill(html, name=customer.name, email=customer.email) if html else "",
        workspace=workspace,
        name=customer.name,
        email=customer.email,
        message_id=message_id,
        unsubscribe_url=unsubscribe_url(workspace_id=workspace_id, email=customer.email),
    )
