"""GET /l/<key>: record a click and redirect with `lf_cid`; while the database is down, still redirect."""

import functools
import logging
import threading
from collections import OrderedDict

from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.views.decorators.http import require_safe

from clicks.bots import is_bot
from clicks.recipients import (
    RECIPIENT_PARAM,
    broadcast_recipient_verify,
    click_broadcast_record,
    click_recipient_record,
    recipient_verify,
)
from clicks.services import click_follow, destination_with_click_id, link_destination
from lftrack.batching import Abandoned, IntervalCount
from lftrack.metrics import BACKEND_ERRORS, CLICKS, labelled
from lftrack.ratelimit import client_key

logger = logging.getLogger("lftrack.redirect")


class _RecentLinks:
    """The destinations of the links this process served lately (an LRU of `size`), for outages only:
    a visitor then still reaches the destination, without a click id, and no click is recorded. A
    destination changed during an outage may be served as it was for its length."""

    def __init__(self, size: int):
        self.size = size
        self._rows: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()

    def remember(self, key: str, destination: str) -> None:
        with self._lock:
            self._rows[key] = destination
            self._rows.move_to_end(key)
            if len(self._rows) > self.size:
                self._rows.popitem(last=False)

    def get(self, key: str) -> str | None:
        with self._lock:
            return self._rows.get(key)


recent_links = _RecentLinks(size=10_000)

# The overload policy (docs/deployment.md, "When PostgreSQL is slow or gone"): a click that the database
# could not store within REDIRECT_DEADLINE (or at all) is answered without tracking, a 302 without a click
# id (a 503 for a link this process has not served yet). A burst makes thousands a second: counted, with
# a log line per interval, not per click (the metric is lftrack_clicks_total{outcome="outage"}).
untracked = IntervalCount(
    logger,
    "redirects answered without a click recorded: database unavailable or slow",
    every=settings.UNTRACKED_LOG_SECONDS,
)


@require_safe
def follow_link(request: HttpRequest, key: str) -> HttpResponse:
    location = visit_location(
        key=key,
        meta=request.META,
        client=client_key(request),
        token=request.GET.get(RECIPIENT_PARAM),
        head=request.method == "HEAD",
    )
    return _redirect(location)


def visit_location(*, key: str, meta: dict, client: str, token: str | None, head: bool = False) -> str:
    """Where a visit of the link `key` goes (its Location), the click recorded first; a HEAD (link previews,
    monitors) records nothing. Shared by the view and lftrack/wsgi.py's path before Django's handler (clicks/wsgi.py).
    Raises Http404, or the database's error when it is out and this process has not served the link lately."""
    try:
        return _head(key) if head else _follow(key, meta, client, token)
    except (OperationalError, InterfaceError, Abandoned) as exc:
        untracked.add()
        destination = recent_links.get(key)
        if destination is None:
            raise  # 503 service unavailable (lftrack/errors.py)
        labelled(CLICKS, "outage").inc()
        if not isinstance(exc, Abandoned):
            labelled(BACKEND_ERRORS, "database").inc()
        return _uri(destination)


def _head(key: str) -> str:
    destination = link_destination(key)
    if destination is None:
        raise Http404("unknown link")
    recent_links.remember(key, destination)
    return _uri(destination)


def _follow(key: str, meta: dict, client: str, token: str | None) -> str:
    user_agent = meta.get("HTTP_USER_AGENT", "")
    followed = click_follow(
        key=key,
        user_agent=user_agent,
        referrer=meta.get("HTTP_REFERER", ""),
        is_bot=is_bot(user_agent=user_agent, meta=meta),
        client=client,
    )
    if followed is None:
        raise Http404("unknown link")
    destination, click_id, outcome = followed
    recent_links.remember(key, destination)
    # A campaign email's link: its signed token names the send (so the step and contact). A forged or
    # altered one is ignored: the click stays an ordinary click.
    if click_id is not None and token:
        try:
            if (send_id := recipient_verify(key=key, token=token)) is not None:
                click_recipient_record(click_id=click_id, send_id=send_id)
            elif (recipient_id := broadcast_recipient_verify(key=key, token=token)) is not None:
                click_broadcast_record(click_id=click_id, recipient_id=recipient_id)
        except DatabaseError as exc:  # the click is stored: it stays an ordinary one, its id still handed out
            logger.warning("email click not attributed (%s)", type(exc).__name__)
    # Past the click limit, or to a gone link's fallback, the visitor is redirected with nothing recorded.
    labelled(CLICKS, outcome).inc()
    location = _uri(destination)
    return location if click_id is None else destination_with_click_id(location, click_id)


@functools.lru_cache(maxsize=10_000)
def _uri(destination: str) -> str:
    """The Location that HttpResponseRedirect sends for `destination` (an IRI made a URI; DisallowedRedirect,
    a 400, for a scheme other than http, https or ftp), worked out once per destination and process: it
    cost each redirect 50,000 instructions (docs/benchmarks.md, "Per-process caches on the redirect"). The click
    id is URL-safe, so adding it afterwards gives the same URI."""
    return HttpResponseRedirect(destination)["Location"]


def _redirect(location: str) -> HttpResponse:
    response = HttpResponse(status=302)
    response["Location"] = location
    # Every visit must reach us to be counted: no browser or proxy may cache the redirect.
    response["Cache-Control"] = "no-store"
    response["Referrer-Policy"] = "no-referrer-when-downgrade"
    return response
