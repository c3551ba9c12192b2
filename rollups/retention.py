"""Retention: a workspace's clicks and conversions older than its `retention_days`, purged in bounded batches.

docs/privacy.md, "Retention". Only rows the roll-ups have already added up go (ids at or below each source
table's watermark), so every number stays true: the totals and the daily roll-ups keep what the rows said, and
every read of a day takes it from them (rollups/selectors.py). A click goes with its conversions and their
refunds, and only when all of them are past the window and rolled up: a recent sale on an old click keeps
the click (a click id stays valid as long as the click exists: a purged one is `unknown click_id`).

Fair per workspace (docs/concurrency.md, "Fair shares"): each pass takes at most one batch of each
workspace, in its own transaction; a workspace whose batch fails is logged and skipped, the others go on.
"""

import logging
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import DatabaseError, transaction
from django.db.models import SET_NULL
from django.utils import timezone

from clicks.models import Click
from conversions.models import ConversionEvent, Refund
from lftrack.db import sql_cursor
from rollups.models import Watermark
from workspaces.models import Workspace

logger = logging.getLogger("lftrack.retention")

BATCH_SIZE = 2000  # clicks per workspace per pass: one transaction of a few seconds at most
# Written once a purge deleted anything: the rows it took are only in the roll-ups from then on, so that
# `roll_up_numbers --rebuild`, which counts the source tables again, refuses to run (rollups/services.py).
PURGED_MARK = "retention"

_CLICKS = Click._meta.db_table
_EVENTS = ConversionEvent._meta.db_table
_REFUNDS = Refund._meta.db_table

# The workspace's oldest clicks past the window and rolled up, whose conversions are too (and their refunds
# rolled up), in id order through the (workspace, id) index. The check is a scalar subquery, not NOT EXISTS:
# PostgreSQL turned that into a merge anti-join that read the conversions' click index from its start on every
# batch (1.9 s a batch at 3,000,000 clicks); a subquery per click is one index probe each (docs/benchmarks.md,
# "Retention's purge").
# A click another app remembers (a foreign key that outlives it, SET_NULL: the payment connectors' subscription
# and customer references) is kept as long as that row: a renewal without a click id is attributed to it.
_KEPT = "".join(
    f"\n  AND (SELECT 1 FROM {rel.related_model._meta.db_table} k WHERE k.{rel.field.column} = c.id LIMIT 1) IS NULL"
    for rel in Click._meta.get_fields(include_hidden=True)
    if rel.is_relation and rel.auto_created and not rel.concrete and rel.on_delete is SET_NULL
)
_DOOMED_SQL = f"""
SELECT c.id FROM {_CLICKS} c
WHERE c.workspace_id = %(workspace)s AND c.id <= %(bound)s AND c.created_at < %(cutoff)s
  AND (SELECT 1 FROM {_EVENTS} e WHERE e.click_id = c.id
         AND (e.id > %(events_mark)s OR e.occurred_at >= %(cutoff)s
              OR EXISTS (SELECT 1 FROM {_REFUNDS} r WHERE r.conversion_id = e.id AND r.id > %(refunds_mark)s))
       LIMIT 1) IS NULL{_KEPT}
ORDER BY c.id LIMIT %(limit)s
FOR UPDATE SKIP LOCKED
"""
# The first click of the workspace at or after an id: one probe of the index, for the bisection below.
_PROBE_SQL = f"""
SELECT id, created_at FROM {_CLICKS} WHERE workspace_id = %(workspace)s AND id >= %(id)s ORDER BY id LIMIT 1
"""


@dataclass
class PurgeResult:
    clicks: int = 0
    conversions: int = 0
    refunds: int = 0
    more: bool = False  # some workspace took a whole batch: more may be waiting
    failed: list[int] = field(default_factory=list)  # workspaces whose batch failed this pass (logged)

    def as_dict(self) -> dict:
        return {
            "clicks": self.clicks,
            "conversions": self.conversions,
            "refunds": self.refunds,
            "more": self.more,
            "failed": self.failed,
        }


def _marks() -> dict[str, int]:
    return dict(Watermark.objects.filter(source__in=[_CLICKS, _EVENTS, _REFUNDS]).values_list("source", "last_id"))


def _id_bound(workspace_id: int, *, upto: int, cutoff: datetime) -> int:
    """The last click id of the workspace, at most `upto`, made before `cutoff`: clicks are inserted as they
    happen, so ids follow time; a bisection of the (workspace, id) index, about 30 probes for 50,000,000
    clicks. The purge checks each row's time again: a click out of order is only left for a later pass."""
    lo, hi = 0, upto  # the answer is in [lo, hi]; 0: none
    with sql_cursor() as cursor:
        while lo < hi:
            mid = (lo + hi + 1) // 2
            cursor.execute(_PROBE_SQL, {"workspace": workspace_id, "id": mid})
            row = cursor.fetchone()
            if row is not None and row.id <= hi and row.created_at < cutoff:
                lo = row.id  # at least mid: the bound is this click or a later one
            else:
                hi = mid - 1  # none in [mid, hi], or the first of them is already inside the window
    return lo


def workspace_purge(*, workspace: Workspace, now: datetime, marks: dict[str, int], limit: int = BATCH_SIZE) -> dict:
    """One batch of the workspace's purge, in one transaction: `{"clicks", "conversions", "refunds"}` deleted."""
    cutoff = now - timedelta(days=workspace.retention_days)
    bound = _id_bound(workspace.pk, upto=marks.get(_CLICKS, 0), cutoff=cutoff)
    if bound == 0:
        return {"clicks": 0, "conversions": 0, "refunds": 0}
    with transaction.atomic():
        with sql_cursor() as cursor:
            cursor.execute(
                _DOOMED_SQL,
                {
                    "workspace": workspace.pk,
                    "bound": bound,
                    "cutoff": cutoff,
                    "events_mark": marks.get(_EVENTS, 0),
                    "refunds_mark": marks.get(_REFUNDS, 0),
                    "limit": limit,
                },
            )
            ids = [row.id for row in cursor.fetchall()]
        if not ids:
            return {"clicks": 0, "conversions": 0, "refunds": 0}
        # The ORM's delete follows every foreign key to clicks and conversions, whichever app owns it (payment
        # references and deliveries included), as deleting a link does.
        _, deleted = Click.objects.filter(pk__in=ids).delete()
        Watermark.objects.get_or_create(source=PURGED_MARK)
    return {
        "clicks": deleted.get(Click._meta.label, 0),
        "conversions": deleted.get(ConversionEvent._meta.label, 0),
        "refunds": deleted.get(Refund._meta.label, 0),
    }


def retention_purge(*, now: datetime | None = None, limit: int = BATCH_SIZE) -> PurgeResult:
    """One pass: a batch of each workspace with a retention window, in workspace order (docs/privacy.md)."""
    now = now or timezone.now()
    marks = _marks()
    result = PurgeResult()
    for workspace in Workspace.objects.filter(retention_days__isnull=False).order_by("pk"):
        try:
            done = workspace_purge(workspace=workspace, now=now, marks=marks, limit=limit)
        except DatabaseError as exc:
            # A poisoned batch stalls its workspace only (docs/concurrency.md, "Fair shares").
            logger.error(
                "retention purge failed", extra={"workspace_id": workspace.pk, "error": exc.__class__.__name__}
            )
            result.failed.append(workspace.pk)
            continue
        result.clicks += done["clicks"]
        result.conversions += done["conversions"]
        result.refunds += done["refunds"]
        result.more = result.more or done["clicks"] >= limit
    return result


def retention_run(*, seconds: float = 50.0, limit: int = BATCH_SIZE) -> dict:
    """Passes until nothing is left or `seconds` are up: the periodic job's run (rollups/tasks.py)."""
    deadline = time.monotonic() + seconds
    total = PurgeResult()
    passes = 0
    while True:
        result = retention_purge(limit=limit)
        passes += 1
        total.clicks += result.clicks
        total.conversions += result.conversions
        total.refunds += result.refunds
        total.failed = sorted(set(total.failed) | set(result.failed))
        total.more = result.more
        if not result.more or time.monotonic() >= deadline:
            break
    if total.clicks:
        logger.info("retention purge", extra={**total.as_dict(), "passes": passes})
    return {**total.as_dict(), "passes": passes}
