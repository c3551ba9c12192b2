"""The gauges read from the tables at each scrape: roll-up lag, the sender's backlog, the webhook queue."""

import logging
import math

from django.db import DatabaseError
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from campaigns.models import Campaign, Enrollment
from lftrack.db import sql_cursor
from lftrack.fairshare import waiting_workspaces_sql
from rollups.models import Watermark
from rollups.services import ROLLED_UP
from webhooks.models import Delivery, Endpoint, Event

logger = logging.getLogger("lftrack.metrics")
_ENROLLMENT = Enrollment._meta.db_table
_SCHEDULED = "e.state = 'active' AND e.next_send_at IS NOT NULL"

# Per source table (times from Python's clock, as the rows were stamped): how long since its roll-up last caught
# up, while rows wait above its watermark (0 when none wait; NULL when it was never rolled up). A probe of the
# primary key each.
_ROLLUP_LAG_SQL = " UNION ALL ".join(
    f"""SELECT '{model._meta.db_table}' AS source, CASE
        WHEN NOT EXISTS (SELECT 1 FROM {model._meta.db_table} x WHERE x.id > COALESCE(w.last_id, 0)) THEN 0
        ELSE EXTRACT(EPOCH FROM %(now)s - w.rolled_up_at) END AS seconds
    FROM (SELECT 1) one LEFT JOIN {Watermark._meta.db_table} w ON w.source = '{model._meta.db_table}'"""
    for model in ROLLED_UP
)

# The oldest email due and not yet sent, of an active campaign: the sender's skip scan of
# `campaigns_enrollment_due` (campaigns/sending.py), then each waiting workspace's earliest due enrollment.
_BACKLOG_SQL = f"""
WITH RECURSIVE waiting (workspace_id, next_send_at) AS (
    {waiting_workspaces_sql(table=_ENROLLMENT, condition=_SCHEDULED, first="next_send_at")}
)
SELECT EXTRACT(EPOCH FROM %(now)s - min(oldest.next_send_at)) AS seconds
FROM waiting w CROSS JOIN LATERAL (
    SELECT e.next_send_at FROM {_ENROLLMENT} e JOIN {Campaign._meta.db_table} c ON c.id = e.campaign_id
    WHERE e.workspace_id = w.workspace_id AND {_SCHEDULED} AND e.next_send_at <= %(now)s AND c.status = 'active'
    ORDER BY e.next_send_at LIMIT 1
) oldest
WHERE w.next_send_at <= %(now)s
"""

# Events not yet turned into deliveries (webhooks_event_undispatched), deliveries waiting to be sent to enabled
# endpoints (webhooks_delivery_by_endpoint), and the disabled endpoints.
_WEBHOOKS_SQL = f"""
SELECT
    (SELECT count(*) FROM {Event._meta.db_table} WHERE dispatched_at IS NULL) AS undispatched,
    (SELECT count(*) FROM {Delivery._meta.db_table} d JOIN {Endpoint._meta.db_table} p ON p.id = d.endpoint_id
     WHERE p.enabled AND d.state = 'pending') AS pending,
    (SELECT count(*) FROM {Endpoint._meta.db_table} WHERE NOT enabled) AS disabled
"""


class TablesCollector(Collector):
    """Added to every scrape by RollupsConfig.ready() (lftrack/metrics.py, scrape_collector_add)."""

    def collect(self):
        now = {"now": timezone.now()}  # the clock the sender and the roll-up stamp their rows with
        try:
            with sql_cursor() as cursor:
                cursor.execute(_ROLLUP_LAG_SQL, now)
                lags = cursor.fetchall()
                cursor.execute(_BACKLOG_SQL, now)
                backlog = cursor.fetchone().seconds
                cursor.execute(_WEBHOOKS_SQL)
                webhooks = cursor.fetchone()
        except DatabaseError as exc:
            # During an outage the scrape still carries the counters, the database errors among them; the
            # gauges are missing, which an alert on them reads as "no data".
            logger.warning("metrics gauges not read: database unavailable (%s)", type(exc).__name__)
            return
        lag = GaugeMetricFamily(
            "lftrack_rollup_lag_seconds",
            "Seconds since the roll-up last caught up with a source table while rows of it wait (0: none wait; "
            "+Inf: never rolled up).",
            labels=["source"],
        )
        for row in lags:
            lag.add_metric([row.source], math.inf if row.seconds is None else max(0.0, float(row.seconds)))
        yield lag
        yield GaugeMetricFamily(
            "lftrack_sender_backlog_seconds",
            "Age of the oldest campaign email due and not yet sent (0 when none is due).",
            value=max(0.0, float(backlog or 0)),
        )
        queue = GaugeMetricFamily(
            "lftrack_webhook_queue_depth",
            "Webhook work waiting: events not yet dispatched to their endpoints, and deliveries pending to enabled ones.",
            labels=["stage"],
        )
        queue.add_metric(["undispatched"], webhooks.undispatched)
        queue.add_metric(["pending"], webhooks.pending)
        yield queue
        yield GaugeMetricFamily(
            "lftrack_webhook_endpoints_disabled",
            "Webhook endpoints disabled now (until an owner re-enables them).",
            value=webhooks.disabled,
        )
