"""Segments: a saved filter over a workspace's contacts, checked on save and compiled to one indexed query of contacts."""

from datetime import UTC, date, datetime, time, timedelta

from django.db import IntegrityError, transaction
from django.db.models import Exists, OuterRef, QuerySet, Subquery

from campaigns.models import Campaign, Enrollment, Segment
from clicks.models import Link, Post
from customers.models import ContactTag, Customer
from customers.tags import MAX_TAGS, tags_clean
from lftrack.errors import Unprocessable
from workspaces.models import Workspace

FILTERS = (
    "tags",
    "sources",
    "campaign_id",
    "enrollment_states",
    "converted",
    "first_touch_post_id",
    "first_touch_link_id",
    "created_from",
    "created_to",
)
MAX_NAME = 200


def segment_filters_clean(*, workspace: Workspace, filters: dict) -> dict:
    """The filters as stored: only the known keys with a value, each checked (ids of this workspace, dates as
    YYYY-MM-DD); raises Unprocessable with what is wrong. An empty filter is every contact with an address."""
    unknown = set(filters) - set(FILTERS)
    if unknown:
        raise Unprocessable(f"unknown filter: {sorted(unknown)[0]}")
    clean: dict = {}
    if filters.get("tags"):
        tags = tags_clean(list(filters["tags"]))
        if len(tags) > MAX_TAGS:
            raise Unprocessable(f"at most {MAX_TAGS} tags")
        clean["tags"] = tags
    if filters.get("sources"):
        sources = list(dict.fromkeys(filters["sources"]))
        if not set(sources) <= set(Customer.Channel.values):
            raise Unprocessable("unknown source")
        clean["sources"] = sources
    if filters.get("campaign_id") is not None:
        if not Campaign.objects.filter(workspace=workspace, pk=filters["campaign_id"]).exists():
            raise Unprocessable("unknown campaign")
        clean["campaign_id"] = int(filters["campaign_id"])
        states = list(dict.fromkeys(filters.get("enrollment_states") or []))
        if not set(states) <= set(Enrollment.State.values):
            raise Unprocessable("unknown enrollment state")
        if states:
            clean["enrollment_states"] = states
    elif filters.get("enrollment_states"):
        raise Unprocessable("enrollment states need a campaign")
    if filters.get("converted") is not None:
        if not isinstance(filters["converted"], bool):
            raise Unprocessable("converted must be true or false")
        clean["converted"] = filters["converted"]
    for name, model in (("first_touch_post_id", Post), ("first_touch_link_id", Link)):
        if filters.get(name) is not None:
            if not model.objects.filter(workspace=workspace, pk=filters[name]).exists():
                raise Unprocessable(f"unknown {model._meta.model_name}")
            clean[name] = int(filters[name])
    for name in ("created_from", "created_to"):
        if filters.get(name):
            try:
                clean[name] = date.fromisoformat(str(filters[name])).isoformat()
            except ValueError:
                raise Unprocessable(f"{name} must be a date (YYYY-MM-DD)") from None
    return clean


def segment_contacts(*, workspace_id: int, filters: dict) -> QuerySet[Customer]:
    """The contacts a segment holds now: live, not erased, with an address, and every filter met (all of them; a
    list filter holds any of its values). One query; each filter is served by an index: tags by
    customers_contacttag_by_name, a campaign by its enrollments' unique (campaign, customer), conversions by
    conversions_event_customer, creation by customers_customer_recent."""
    contacts = Customer.objects.filter(workspace_id=workspace_id, is_test=False, erased_at__isnull=True).exclude(
        email=""
    )
    if filters.get("tags"):
        tagged = ContactTag.objects.filter(
            workspace_id=workspace_id, name__in=filters["tags"], customer_id=OuterRef("pk")
        )
        contacts = contacts.filter(Exists(tagged))
    if filters.get("sources"):
        contacts = contacts.filter(source__in=filters["sources"])
    if filters.get("campaign_id") is not None:
        enrolled = Enrollment.objects.filter(campaign_id=filters["campaign_id"], customer_id=OuterRef("pk"))
        if filters.get("enrollment_states"):
            enrolled = enrolled.filter(state__in=filters["enrollment_states"])
        contacts = contacts.filter(Exists(enrolled))
    # Conversions sit above campaigns (docs/architecture.md, "The layers"): read through the reverse relation
    # the conversion's customer key declares, never by importing the app.
    conversions = _conversions_model().objects.filter(customer_id=OuterRef("pk"), is_test=False)
    if filters.get("converted") is not None:
        contacts = contacts.filter(Exists(conversions) if filters["converted"] else ~Exists(conversions))
    if filters.get("first_touch_post_id") is not None or filters.get("first_touch_link_id") is not None:
        # The first touch as the contact page shows it: the click of their earliest conversion.
        first = conversions.order_by("click__created_at", "click_id")
        if filters.get("first_touch_link_id") is not None:
            contacts = contacts.alias(first_link=Subquery(first.values("link_id")[:1]))
            contacts = contacts.filter(first_link=filters["first_touch_link_id"])
        if filters.get("first_touch_post_id") is not None:
            contacts = contacts.alias(first_post=Subquery(first.values("link__post_id")[:1]))
            contacts = contacts.filter(first_post=filters["first_touch_post_id"])
    if filters.get("created_from"):
        contacts = contacts.filter(created_at__gte=_midnight(filters["created_from"]))
    if filters.get("created_to"):  # the whole of that day
        contacts = contacts.filter(created_at__lt=_midnight(filters["created_to"]) + timedelta(days=1))
    return contacts


def _conversions_model():
    return Customer._meta.get_field("conversions").related_model


def _midnight(day: str) -> datetime:
    return datetime.combine(date.fromisoformat(day), time.min, tzinfo=UTC)


def segment_count(*, workspace_id: int, filters: dict) -> int:
    return segment_contacts(workspace_id=workspace_id, filters=filters).count()


def segment_save(*, workspace: Workspace, name: str, filters: dict, segment: Segment | None = None) -> Segment:
    """Create or change a segment; its filters checked first. A name taken in the workspace raises Unprocessable."""
    name = name.strip()
    if not name:
        raise Unprocessable("name is required")
    if len(name) > MAX_NAME:
        raise Unprocessable("name is too long")
    clean = segment_filters_clean(workspace=workspace, filters=filters)
    try:
        with transaction.atomic():
            if segment is None:
                return Segment.objects.create(workspace=workspace, name=name, filters=clean)
            segment.name, segment.filters = name, clean
            segment.save(update_fields=["name", "filters", "updated_at"])
            return segment
    except IntegrityError:
        raise Unprocessable("a segment of that name exists") from None
