"""Admin numbers as rolled-up totals plus the live tail: exact at every moment, cheap while the tail is short."""
from django.db import models
from django.db.models import QuerySet, Subquery
from django.db.models.functions import Coalesce

from rollups.models import Watermark


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
