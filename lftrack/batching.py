"""Group commit inside a process: concurrent requests hand their writes to one of them, which stores them together.

The redirect writes one small row per click, and a commit costs PostgreSQL a WAL flush (2 to 3 ms of
fdatasync on this machine's disk) and each statement a round trip, a parse of its result and
Django's cursor machinery. `Batcher.submit` lets threads of one process share that: the first
thread to arrive while no batch is being written becomes the *leader* and writes everything waiting
(its own item first) with one call of `write`, on its own database connection; the threads that
arrive meanwhile wait, and when the leader's batch is done it hands the lead to the first of them,
which writes all that gathered during the previous batch. So a busy process writes a batch per commit,
a quiet one writes each item at once (a batch of one, no waiting), and a request answers only after
the statement that stored its item returned: the write stays as durable as one statement per request.

No thread of its own: the leader is a request thread, so its writes run on its own connection, under
its request's deadline (lftrack/deadline.py) and, in tests, inside the test's transaction.
"""

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from lftrack.metrics import BATCH_SIZE

Item = TypeVar("Item")


@dataclass(eq=False)
class _Ticket(Generic[Item]):
    item: Item
    # Looked up per ticket, not bound at import: under gevent the patched lock, whenever this module was imported.
    done: Any = field(default_factory=lambda: threading.Lock())  # held until answered (a one-shot semaphore)
    result: Any = None
    error: BaseException | None = None
    lead: bool = False  # the previous leader handed this ticket's thread the lead


class Abandoned(Exception):
    """The item was not written within the caller's timeout (and will not be, unless it was already on its way:
    taken into a batch whose write had not returned)."""


class Batcher(Generic[Item]):
    """`submit(item)` returns `write([..., item, ...])`'s result for `item`, written in a batch with the items
    of other threads that wait at the same time; `write` gets at most `max_batch` items and returns one
    result per item, in order. An exception from `write` is raised in every thread of that batch."""

    def __init__(self, write: Callable[[Sequence[Item]], Sequence[Any]], *, max_batch: int = 64):
        self.write = write
        self.max_batch = max_batch
        self._lock = threading.Lock()
        self._waiting: list[_Ticket[Item]] = []
        self._leading = False

    def submit(self, item: Item, *, timeout: float | None = None) -> Any:
        ticket = _Ticket(item)
        ticket.done.acquire()
        with self._lock:
            if self._leading:
                self._waiting.append(ticket)
            else:
                self._leading = True
                ticket.lead = True
        if not ticket.lead:
            if not ticket.done.acquire(timeout=-1 if timeout is None else timeout):
                with self._lock:
                    if ticket in self._waiting:  # not taken into a batch yet: it never will be
                        self._waiting.remove(ticket)
                        raise Abandoned()
                    made_leader = ticket.lead
                if not made_leader:
                    # In a batch being written, whose leader may itself be late (a successor that has yet to
                    # connect): the caller's time is up all the same. The item may still be stored; the
                    # caller answers without its result (the redirect: no click id handed out).
                    raise Abandoned()
                ticket.done.acquire()  # handed the lead as the wait ran out: released at once, and it leads
            if not ticket.lead:
                if ticket.error is not None:
                    raise ticket.error
                return ticket.result
        self._lead(ticket)
        if ticket.error is not None:
            raise ticket.error
        return ticket.result

    def _lead(self, own: _Ticket[Item]) -> None:
        """Write our own item and everything waiting (up to max_batch), answer them, pass the lead on."""
        with self._lock:
            batch = [own, *self._waiting[: self.max_batch - 1]]
            del self._waiting[: self.max_batch - 1]
        BATCH_SIZE.observe(len(batch))
        try:
            results = self.write([ticket.item for ticket in batch])
            for ticket, result in zip(batch, results, strict=True):
                ticket.result = result
        except BaseException as exc:  # every thread of the batch answers with the failure (a 503, a 500)
            for ticket in batch:
                ticket.error = exc
        finally:
            with self._lock:
                successor = self._waiting.pop(0) if self._waiting else None
                if successor is None:
                    self._leading = False
                else:
                    successor.lead = True
            for ticket in batch[1:]:
                ticket.done.release()
            if successor is not None:
                successor.done.release()


class IntervalCount:
    """A count of events too frequent to log one by one (a click answered without tracking, under a burst):
    `add()` counts, and a line goes to `logger` per `every` seconds in which any occurred, with the count
    since the previous line and since the process started (`total`, also readable for a metric).

    The line is written by a background thread (a greenlet under gevent) that lives while events come:
    the first line `every` seconds after the first event, none while nothing happens."""

    def __init__(self, logger: logging.Logger, message: str, *, every: float = 10.0):
        self.logger = logger
        self.message = message
        self.every = every
        self.total = 0
        self._pending = 0
        self._lock = threading.Lock()
        self._reporting = False

    def add(self, n: int = 1) -> None:
        with self._lock:
            self.total += n
            self._pending += n
            if self._reporting:
                return
            self._reporting = True
        threading.Thread(target=self._report, name="lftrack-interval-count", daemon=True).start()

    def _report(self) -> None:
        while True:
            time.sleep(self.every)
            with self._lock:
                count, self._pending = self._pending, 0
                if not count:
                    self._reporting = False
                    return
                total = self.total
            self.logger.warning(self.message, extra={"count": count, "total": total, "interval_seconds": self.every})
