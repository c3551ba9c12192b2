"""Prometheus metrics: the families every layer counts into, the requests' middleware, what /metrics answers.

Under gunicorn each worker counts into files of its own in PROMETHEUS_MULTIPROC_DIR (gunicorn.conf.py
makes one when it is not set), and a scrape of any worker adds every process's files up: prometheus-client's
multiprocess mode. Without the variable (runserver, the test suite) the counts stay in the process.
Only counters and histograms are counted here; the gauges (backlog age, queue depth, roll-up lag) are read
from the tables at scrape time by the collectors the apps add (`scrape_collector_add`), so they are right
whichever process answers. docs/metrics.md lists every family, its labels and the alert rules.
"""

import logging
import os
import time
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram, generate_latest, multiprocess
from prometheus_client.registry import Collector

# Label values are fixed words, route names and status codes: never a path, an address or anything a
# client sent (docs/metrics.md, "Labels").
REQUESTS = Histogram(
    "lftrack_request_duration_seconds",
    "Requests answered, by URL pattern name and status, and how long each took in the application.",
    ["route", "status"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
)
CLICKS = Counter(
    "lftrack_clicks",
    "GET /l/<key> redirects by outcome: recorded (a click id), limited (past RATELIMIT_REDIRECT_IP), gone (a deleted "
    "or expired link's fallback) or outage (the database unavailable; redirected from the process's recent links), "
    "none of the last three with a click.",
    ["outcome"],
)
BATCH_SIZE = Histogram(
    "lftrack_batch_size",
    "Items written per call by lftrack/batching.py's group commit: the redirect's clicks per statement (its only user).",
    buckets=(1, 2, 4, 8, 16, 32, 64),
)
CONVERSIONS = Counter(
    "lftrack_conversions",
    "Valid conversion requests by channel (api, pixel), event (lead, sale) and outcome: recorded, replayed (an "
    "Idempotency-Key's, an invoice_id's or the pixel's repeat) or refused (unknown click_id, a conflict...).",
    ["channel", "event", "outcome"],
)
RATE_LIMITED = Counter(
    "lftrack_rate_limited",
    "Requests or clicks over a rate limit, by the limit's name (lftrack/ratelimit.py).",
    ["limit"],
)
BACKEND_ERRORS = Counter(
    "lftrack_backend_errors",
    "Failures of PostgreSQL (a request answered 503, a redirect without a click) or Redis (a rate-limit count "
    "that failed open), by backend: database, redis.",
    ["backend"],
)
DEADLINE_CUTS = Counter(
    "lftrack_deadline_cuts",
    "Database connections cut because their request passed REQUEST_DEADLINE or REDIRECT_DEADLINE.",
)
EMAILS = Counter(
    "lftrack_emails",
    "Campaign emails handled by the sender, by outcome: sent, deferred (over the daily limit or to retry), "
    "skipped (suppressed or no address), failed (refused for good or unconfirmed, bounces included), "
    "bounced, test.",
    ["outcome"],
)
WEBHOOK_ATTEMPTS = Counter(
    "lftrack_webhook_attempts",
    "Webhook delivery attempts by outcome: delivered, retry (failed, to be tried again) or failed (for good).",
    ["outcome"],
)
WEBHOOK_DISABLINGS = Counter(
    "lftrack_webhook_disablings",
    "Webhook endpoints disabled for failing (WEBHOOK_FAILURES_TO_DISABLE in a row, or the whole retry window).",
)
JOB_FAILURES = Counter(
    "lftrack_job_failures",
    "Task engine jobs that raised, by task and outcome: retry (tried again later) or failed (for good).",
    ["task", "outcome"],
)

# The collectors the apps add, read at each scrape (rollups/metrics.py).
_scrape_collectors: list[Collector] = []


def scrape_collector_add(collector: Collector) -> None:
    """Read `collector` at every scrape, beside the counted families (an AppConfig.ready() adds its own)."""
    if collector not in _scrape_collectors:
        _scrape_collectors.append(collector)


class _Counted:
    """The process's own registry as a collector, when there is no multiprocess directory to read."""

    def collect(self):
        return REGISTRY.collect()


def exposition() -> bytes:
    """The text a scrape gets: every process's counted families, then the scrape-time gauges."""
    registry = CollectorRegistry(auto_describe=False)
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        multiprocess.MultiProcessCollector(registry)
    else:
        registry.register(_Counted())
    for collector in _scrape_collectors:
        registry.register(collector)
    return generate_latest(registry)


# The routes answered before URL resolving: the redirect (clicks/middleware.py), the probes and this
# endpoint (lftrack/middleware.py, ProbeMiddleware), the static files (whitenoise).
_EARLY = {"/healthz": "healthz", "/readyz": "readyz", "/metrics": "metrics"}


def _route(request: HttpRequest) -> str:
    match = getattr(request, "resolver_match", None)
    if match is not None:
        return match.view_name
    path = request.path_info
    if path.startswith("/l/"):
        return "follow-link"
    if path.startswith(settings.STATIC_URL):
        return "static"
    return _EARLY.get(path, "unmatched")


class RequestMetricsMiddleware:
    """First of settings.MIDDLEWARE: every answer's route, status and time into REQUESTS (its cost on the
    redirect: docs/benchmarks.md, "Metrics on the redirect")."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        response = self.get_response(request)
        labelled(REQUESTS, _route(request), str(response.status_code)).observe(time.perf_counter() - started)
        return response


class JobOutcomes(logging.Handler):
    """On the task engine's worker logger (settings.LOGGING): counts the jobs that raised, from the line the
    worker writes when a job ends (its `action`: job_error, job_error_retry), by task name."""

    _OUTCOMES = {"job_error": "failed", "job_error_retry": "retry"}

    def emit(self, record: logging.LogRecord) -> None:
        outcome = self._OUTCOMES.get(getattr(record, "action", ""))
        job = getattr(record, "job", None)
        if outcome is not None and isinstance(job, dict):
            labelled(JOB_FAILURES, str(job.get("task_name", "")), outcome).inc()


_children: dict[tuple[object, tuple[str, ...]], object] = {}


def labelled(metric: Counter | Histogram, *values: str):
    """`metric.labels(*values)`, looked up once per process: labels() checks and builds its key each call, a
    dictionary of the children does not (every hot-path count goes through here)."""
    try:
        return _children[metric, values]
    except KeyError:
        return _children.setdefault((metric, values), metric.labels(*values))
