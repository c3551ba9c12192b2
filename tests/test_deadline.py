"""lftrack.deadline: a request still waiting on PostgreSQL past its deadline has its connection cut."""

import threading
import time

import pytest
from django.db import OperationalError, connection

from lftrack.deadline import watchdog

pytestmark = pytest.mark.django_db(transaction=True)


def request_in_thread(deadline: float, before_query: float) -> dict:
    """A request of its own thread (its own connection, opened by its first query after `before_query`
    seconds) whose query would take 5 s: what it got and how long it waited on the database."""
    outcome: dict = {}

    def request() -> None:
        watchdog.watch(time.monotonic() + deadline)
        try:
            time.sleep(before_query)
            started = time.monotonic()
            try:
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_sleep(5)")
                outcome["answer"] = "served"
            except OperationalError:
                outcome["answer"] = "cut"
            outcome["waited"] = time.monotonic() - started
        finally:
            watchdog.forget()
            connection.close()

    thread = threading.Thread(target=request)
    thread.start()
    thread.join(15)
    return outcome


def test_a_query_past_the_deadline_is_cut():
    outcome = request_in_thread(deadline=0.5, before_query=0)
    assert outcome["answer"] == "cut" and outcome["waited"] < 0.5 + 1


def test_a_request_late_before_it_opened_a_connection_is_cut_as_soon_as_it_opens_one():
    """Its deadline passes (and the watchdog looks) while it has no connection yet: it stays watched."""
    outcome = request_in_thread(deadline=0.1, before_query=0.6)
    assert outcome["answer"] == "cut" and outcome["waited"] < 1
