"""The paginator of the back office's lists: counts capped, so a page of a huge table costs a page."""

from django.core.paginator import Paginator
from django.utils.functional import cached_property


class CappedCountPaginator(Paginator):
    """Counts at most CAP rows. An exact COUNT(*) over a million contacts or enrollments would cost
    more than the page itself; past the cap the list says "more than 10,000" and pages that far."""

    CAP = 10_000

    @cached_property
    def count(self) -> int:
        # SELECT COUNT(*) FROM (SELECT id ... LIMIT CAP + 1): no ordering, and none of the list's
        # annotations, which Django would otherwise compute for every counted row.
        return self.object_list.order_by().values("pk")[: self.CAP + 1].count()

    @property
    def capped(self) -> bool:
        return self.count > self.CAP
