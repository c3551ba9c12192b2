"""The event types an endpoint may subscribe to: adding one is a line here and an `event_emit` call.

Each type names the kind of object its body carries; the app that owns that object registers the
builder of its read-API form (webhooks/payloads.py), so this app never imports the apps above it.
"""

# event type -> (object kind, description)
EVENT_TYPES: dict[str, tuple[str, str]] = {
    "click.created": ("click", "A click on a tracked link (opt-in: one event per click)."),
    "lead.created": ("conversion", "A lead was recorded (API, pixel)."),
    "sale.created": ("conversion", "A sale was recorded."),
    "sale.refunded": (
        "conversion",
        "A sale was refunded, in part or in full (the sale with its refunded and net amounts).",
    ),
    "customer.created": ("customer", "A customer (contact) was created."),
    "customer.erased": ("erased_customer", "A customer (contact) was erased: the body carries the id only."),
    "customer.external_id_moved": ("external_id_move", "An external id moved from one customer to another."),
    "enrollment.created": ("enrollment", "A contact was enrolled in a campaign (a pixel enrollment once confirmed)."),
    "enrollment.completed": ("enrollment", "An enrollment's last email was sent."),
    "enrollment.stopped": ("enrollment", "An enrollment was stopped (by hand, by a suppression, at send time)."),
    "contact.unsubscribed": ("suppression", "An address unsubscribed."),
    "contact.bounced": ("suppression", "An address bounced for good."),
    "contact.complained": ("suppression", "An address complained (marked as spam)."),
    "campaign.paused": ("campaign", "A campaign was paused (complaints, or by hand)."),
}

# Sent by "Send test event" to one endpoint only; nobody subscribes to it.
TEST_EVENT = "webhook.test"

SUPPRESSION_EVENTS = {
    "unsubscribed": "contact.unsubscribed",
    "bounced": "contact.bounced",
    "complained": "contact.complained",
}


def event_kind(event_type: str) -> str:
    return "test" if event_type == TEST_EVENT else EVENT_TYPES[event_type][0]
