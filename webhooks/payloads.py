"""The body's object per kind of event, built by the app that owns the object (registered at its ready()).

This app sits below customers, clicks, campaigns and conversions, so it cannot build their read-API
objects itself; each of them registers a builder for its kinds (webhooks/events.py names the kind of
each event type). A builder takes the event and answers the object as the read API shows it now.
"""
from collections.abc import Callable

from webhooks.events import event_kind
from webhooks.models import Event

Builder = Callable[[Event], dict | None]
_BUILDERS: dict[str, Builder] = {}


def payload_builder(kind: str) -> Callable[[Builder], Builder]:
    """Decorator: `fn(event)` builds the object of events of `kind`; None if the object is gone."""

    def register(fn: Builder) -> Builder:
        _BUILDERS[kind] = fn
        return fn

    return register


def _test_object(event: Event) -> dict:
    return {"message": "A test event sent from lftrack's back office. Nothing happened."}


_BUILDERS["test"] = _test_object


def payload_build(event: Event) -> dict:
    """The event's object, or `{"id": ..., "deleted": true}` when it no longer exists."""
    data = _BUILDERS[event_kind(event.type)](event)
    return data if data is not None else {"id": event.subject_id, "deleted": True}
