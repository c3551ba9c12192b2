"""The body's object per kind of event, built by the app that owns the object (registered at its ready()).

This app sits below customers, clicks, campaigns and conversions, so it cannot build their read-API
objects itself; each of them registers, in its AppConfig.ready(), the dotted path of a builder for
each of its kinds (webhooks/events.py names the kind of each event type). A builder takes the event
and answers the object as the read API shows it now, or None when the object is gone. Builders are
imported on first use: a web process that never dispatches an event does not load the read API's
modules at start (half a second of every gunicorn worker's boot).
"""

from collections.abc import Callable

from django.utils.module_loading import import_string

from webhooks.events import event_kind
from webhooks.models import Event

Builder = Callable[[Event], dict | None]
_BUILDERS: dict[str, Builder | str] = {}


def payload_builders_register(builders: dict[str, str]) -> None:
    """`{kind: "app.module.function"}`: how the owning app builds the objects of its kinds."""
    _BUILDERS.update(builders)


def _test_event_object(event: Event) -> dict:
    return {"message": "A test event sent from lftrack's back office. Nothing happened."}


_BUILDERS["test"] = _test_event_object


def payload_build(event: Event) -> dict:
    """The event's object, or `{"id": ..., "deleted": true}` when it no longer exists."""
    kind = event_kind(event.type)
    builder = _BUILDERS[kind]
    if isinstance(builder, str):
        builder = _BUILDERS[kind] = import_string(builder)
    data = builder(event)
    return data if data is not None else {"id": event.subject_id, "deleted": True}
