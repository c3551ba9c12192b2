"""Recording conversions: one function serves the server API, the pixel and the admin."""
from typing import Any

from django.db import transaction
from django.utils import timezone

from campaigns.services import campaign_enroll_from_conversion
from clicks.models import Click
from conversions.models import ConversionEvent
from customers.services import customer_match
from lftrack.errors import Unprocessable
from workspaces.models import Workspace


@transaction.atomic
def conversion_record(
    *,
    workspace: Workspace,
    channel: str,
    event: str,
    click_id: str,
    value_cents: int | None = None,
    event_name: str = "",
    meta: dict[str, Any] | None = None,
    customer: dict[str, str] | None = None,
) -> ConversionEvent:
    """Store a lead or sale against a click of this workspace, matching the customer when one is sent.

    A click of another workspace is unknown. A second lead on the same click is a second event
    (SPEC 4.1, duplicate-lead rule). The pixel (channel "pixel") never moves an external_id.
    """
    click = Click.objects.filter(workspace=workspace, click_id=click_id).values_list("pk", "link_id").first()
    if click is None:
        raise Unprocessable("unknown click_id")
    matched = None
    if customer is not None:
        matched = customer_match(
            workspace=workspace,
            channel=channel,
            may_move_external_id=channel != "pixel",
            **customer,
        ).customer
    conversion = ConversionEvent.objects.create(
        workspace=workspace,
        click_id=click[0],
        link_id=click[1],
        customer=matched,
        event=event,
        value_cents=value_cents if event == ConversionEvent.Event.SALE else None,
        event_name=event_name,
        meta=meta if meta is not None else {},
        occurred_at=timezone.now(),
        channel=channel,
    )
    campaign_enroll_from_conversion(conversion=conversion)
    return conversion
