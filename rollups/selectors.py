"""The numbers of links, posts and campaigns: rolled-up totals plus the live tail, and the registry of link numbers.

Exact at every moment and a handful of index lookups per row, however big the tables grow
(docs/benchmarks.md, "Data growth"). Every link number is declared once, in LINK_NUMBERS: the
annotations below, the back office's columns and the roll-up statements (rollups/services.py) are
made from it, so a new number is a LinkTotals column (and its migration) plus one entry here.
"""
from dataclasses import dataclass

from django.db import models
from django.db.models import Count, F, OuterRef, QuerySet, Subquery, Sum
from django.db.models.expressions import CombinedExpression
from django.db.models.functions import Coalesce

from campaigns.models import CampaignLead
from clicks.models import Click, Link
from conversions.models import ConversionEvent
from rollups.models import CampaignNumberDelta, CampaignTotals, LinkTotals, Watermark


@dataclass(frozen=True)
class LinkNumber:
    """A per-link number: COUNT(*) (or SUM(`summed`)) of `source`'s rows matching `where`."""

    name: str  # the LinkTotals column, the annotation `n_<name>` and the column heading
    source: type[models.Model]  # append-only rows carrying `link` and `workspace`
    where: dict[str, str]  # column = value, on the source rows
    summed: str | None = None
    money: bool = False  # integer cents
    label: str = ""  # the column heading, when not the name

    @property
    def annotation(self) -> str:
        return f"n_{self.name}"

    @property
    def heading(self) -> str:
        return self.label or self.name

    def rows(self) -> QuerySet:
        return self.source.objects.filter(**self.where)


LINK_NUMBERS = (
    LinkNumber("clicks", Click, {"is_bot": False}),  # people only (clicks/bots.py)
    LinkNumber("leads", ConversionEvent, {"event": ConversionEvent.Event.LEAD}),
    LinkNumber("sales", ConversionEvent, {"event": ConversionEvent.Event.SALE}),
    LinkNumber("revenue_cents", ConversionEvent, {"event": ConversionEvent.Event.SALE}, summed="value_cents", money=True,
               label="revenue"),
)


def watermark(model: type[models.Model]) -> Coalesce:
    """The id up to which `model`'s rows are in the totals (0 before the first roll-up)."""
    mark = Watermark.objects.filter(source=model._meta.db_table).values("last_id")[:1]
    return Coalesce(Subquery(mark, output_field=models.BigIntegerField()), 0)


def tail(queryset: QuerySet) -> QuerySet:
    """The rows not yet in the totals; served by an index on (parent, id): (link, id), (campaign, id)."""
    return queryset.filter(pk__gt=watermark(queryset.model))


def total_of(totals: QuerySet, field: str) -> Coalesce:
    """One totals row's `field` (totals are keyed by the outer row), 0 when it has none yet."""
    return Coalesce(Subquery(totals.values(field)[:1], output_field=models.BigIntegerField()), 0)


def count_of(queryset: QuerySet, group: str) -> Coalesce:
    """A correlated COUNT(*) subquery: `queryset` filtered on OuterRef and grouped by that same column."""
    rows = queryset.order_by().values(group).annotate(n=Count("*")).values("n")
    return Coalesce(Subquery(rows, output_field=models.BigIntegerField()), 0)


def sum_of(queryset: QuerySet, group: str, field: str) -> Coalesce:
    """A correlated SUM(field) subquery, 0 when no row matches."""
    rows = queryset.order_by().values(group).annotate(total=Sum(field)).values("total")
    return Coalesce(Subquery(rows, output_field=models.BigIntegerField()), 0)


def _live(number: LinkNumber, group: str) -> Coalesce:
    rows = tail(number.rows().filter(**{group: OuterRef("pk")}))
    return sum_of(rows, group, number.summed) if number.summed else count_of(rows, group)


def links_with_numbers(*, links: QuerySet) -> QuerySet:
    """`links` annotated with every LINK_NUMBERS entry (`n_clicks`, ...)."""
    totals = LinkTotals.objects.filter(link=OuterRef("pk"))
    return links.annotate(
        **{number.annotation: total_of(totals, number.name) + _live(number, "link") for number in LINK_NUMBERS}
    )


def posts_with_numbers(*, posts: QuerySet) -> QuerySet:
    """`posts` annotated with `n_links` and the sum over their links of every LINK_NUMBERS entry."""
    totals = LinkTotals.objects.filter(link__post=OuterRef("pk"))
    return posts.annotate(
        n_links=count_of(Link.objects.filter(post=OuterRef("pk")), "post"),
        **{
            number.annotation: sum_of(totals, "link__post", number.name) + _live(number, "link__post")
            for number in LINK_NUMBERS
        },
    )


def campaigns_with_numbers(*, campaigns: QuerySet) -> QuerySet:
    """Leads above the watermark of campaigns_campaignlead, state changes logged above the watermark of the
    delta log, each added to its rolled-up total: `n_leads`, `n_active`, `n_stopped`, `n_completed`,
    `n_enrollments`, `n_sends`, `n_unsubscribes`, `n_complaints`."""
    totals = CampaignTotals.objects.filter(campaign=OuterRef("pk"))
    deltas = tail(CampaignNumberDelta.objects.filter(campaign=OuterRef("pk")))

    def number(field: str) -> CombinedExpression:
        return total_of(totals, field) + sum_of(deltas, "campaign", field)

    return campaigns.annotate(
        n_leads=total_of(totals, "leads") + count_of(tail(CampaignLead.objects.filter(campaign=OuterRef("pk"))), "campaign"),
        n_active=number("enrollments_active"),
        n_stopped=number("enrollments_stopped"),
        n_completed=number("enrollments_completed"),
        n_enrollments=F("n_active") + F("n_stopped") + F("n_completed"),
        n_sends=number("sends"),
        n_unsubscribes=number("unsubscribes"),
        n_complaints=number("complaints"),
    )
