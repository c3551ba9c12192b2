"""lftrack.batching: concurrent submits are written together, each answered with its own result, after the write."""

import json
import logging
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from lftrack.batching import Abandoned, Batcher, IntervalCount


class GatedWriter:
    """A `write` that records its batches and, while `gate` is closed, holds its first batch."""

    def __init__(self):
        self.batches: list[list] = []
        self.gate = threading.Event()
        self.entered = threading.Event()
        self.fail_on: set = set()

    def __call__(self, items):
        self.batches.append(list(items))
        self.entered.set()
        self.gate.wait(10)
        if self.fail_on & set(items):
            raise RuntimeError("database unavailable")
        return [f"stored {item}" for item in items]


def submit_in_threads(batcher, items, **kwargs) -> dict:
    answers: dict = {}

    def run(item):
        try:
            answers[item] = batcher.submit(item, **kwargs)
        except Exception as exc:
            answers[item] = exc

    threads = [threading.Thread(target=run, args=(item,)) for item in items]
    for thread in threads:
        thread.start()
    return answers, threads


def wait_for_waiters(batcher, count: int) -> None:
    deadline = time.monotonic() + 10
    while len(batcher._waiting) < count:
        assert time.monotonic() < deadline, "submitters never queued"
        time.sleep(0.001)


def test_a_lone_submit_is_written_at_once_by_its_own_thread():
    seen = []
    batcher = Batcher(lambda items: seen.append(threading.get_ident()) or [item * 2 for item in items])
    assert batcher.submit(21) == 42
    assert seen == [threading.get_ident()]


def test_items_waiting_during_a_write_go_together_in_the_next_one_each_with_its_own_answer():
    write = GatedWriter()
    batcher = Batcher(write)
    first, first_threads = submit_in_threads(batcher, ["a"])
    assert write.entered.wait(10)
    answers, threads = submit_in_threads(batcher, ["b", "c", "d", "e"])
    wait_for_waiters(batcher, 4)
    assert not answers  # nobody is answered before the write that stores their item
    write.gate.set()
    for thread in first_threads + threads:
        thread.join(10)
    assert write.batches[0] == ["a"] and sorted(write.batches[1]) == ["b", "c", "d", "e"] and len(write.batches) == 2
    assert {**first, **answers} == {item: f"stored {item}" for item in "abcde"}


def test_a_batch_holds_at_most_max_batch_items_and_the_rest_follow():
    write = GatedWriter()
    batcher = Batcher(write, max_batch=2)
    submit_in_threads(batcher, ["a"])
    assert write.entered.wait(10)
    answers, threads = submit_in_threads(batcher, ["b", "c", "d", "e", "f"])
    wait_for_waiters(batcher, 5)
    write.gate.set()
    for thread in threads:
        thread.join(10)
    assert [len(batch) for batch in write.batches] == [1, 2, 2, 1]
    assert answers == {item: f"stored {item}" for item in "bcdef"}


def test_a_failed_write_fails_every_item_of_its_batch_and_the_next_batch_still_runs():
    write = GatedWriter()
    write.fail_on = {"b"}
    batcher = Batcher(write, max_batch=2)
    first, first_threads = submit_in_threads(batcher, ["a"])
    assert write.entered.wait(10)
    answers, threads = submit_in_threads(batcher, ["b"])
    wait_for_waiters(batcher, 1)
    later, later_threads = submit_in_threads(batcher, ["c", "d"])
    wait_for_waiters(batcher, 3)
    write.gate.set()
    for thread in first_threads + threads + later_threads:
        thread.join(10)
    failed = next(batch for batch in write.batches if "b" in batch)
    for item in failed:
        assert isinstance({**answers, **later}[item], RuntimeError)
    for item in set("cd") - set(failed):
        assert later[item] == f"stored {item}"
    assert first == {"a": "stored a"}
    assert batcher.submit("z") == "stored z"  # the lead was passed on, and finally given back


def test_a_submit_that_waits_past_its_timeout_is_abandoned_and_never_written():
    write = GatedWriter()
    batcher = Batcher(write)
    submit_in_threads(batcher, ["a"])
    assert write.entered.wait(10)
    with pytest.raises(Abandoned):
        batcher.submit("late", timeout=0.05)
    write.gate.set()
    assert batcher.submit("b") == "stored b"
    assert all("late" not in batch for batch in write.batches)


def test_the_lead_passes_to_a_waiter_even_when_its_wait_runs_out_at_that_moment():
    """A waiter handed the lead as its timeout ends must still write, or the queue behind it would stall."""
    write = GatedWriter()
    batcher = Batcher(write)
    submit_in_threads(batcher, ["a"])
    assert write.entered.wait(10)
    answers, threads = submit_in_threads(batcher, ["b"], timeout=0.2)
    wait_for_waiters(batcher, 1)
    time.sleep(0.15)
    write.gate.set()  # the first batch ends about when b's wait does: b either leads or was abandoned
    for thread in threads:
        thread.join(10)
    assert answers["b"] == "stored b" or isinstance(answers["b"], Abandoned)
    assert batcher.submit("c") == "stored c"


def test_under_gevent_many_greenlets_share_batches_and_a_stalled_write_abandons_the_waiters_in_time():
    """As gunicorn's gevent worker runs it (gunicorn.conf.py): the lock and the waits are gevent's, and 400
    greenlets waiting on one process's writes gather in batches of max_batch; when a write stalls, the
    greenlets waiting behind it give up at their timeout while the stalled batch finishes, and only the
    items of batches that were written are answered."""
    greenlets = 400
    result = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("batching_greenlets.py")), str(greenlets)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert result.returncode == 0, result.stderr
    outcome = json.loads(result.stdout)
    fast, stalled = outcome["fast"], outcome["stalled"]
    assert fast["answers_right"]
    assert sum(fast["batches"]) == greenlets and max(fast["batches"]) == 16
    assert len(fast["batches"]) <= greenlets // 16 + 2  # full batches, not one write per greenlet
    # The first greenlet leads alone into a 2 s write; the others wait 0.5 s and give up, none written.
    answers = stalled["answers"]
    assert answers[0] == 0 and answers[1:] == ["abandoned"] * (greenlets - 1)
    assert stalled["written"] == [0]
    assert stalled["slowest_abandoned"] < 1.0  # their timeout, not the stalled write's 2 s


def test_an_interval_count_logs_one_line_per_interval_with_the_count_not_one_per_event(caplog):
    logger = logging.getLogger("lftrack.test-interval-count")
    count = IntervalCount(logger, "untracked", every=0.5)
    with caplog.at_level(logging.WARNING, logger=logger.name):
        threads = [threading.Thread(target=lambda: [count.add() for _ in range(50)]) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert count.total == 400 and caplog.records == []  # nothing per event
        time.sleep(0.8)
        assert [(r.message, r.count, r.total) for r in caplog.records] == [("untracked", 400, 400)]
        time.sleep(0.6)  # a quiet interval: no line, and the reporter stops
        assert len(caplog.records) == 1
        count.add(3)
        time.sleep(0.8)
        assert [(r.count, r.total) for r in caplog.records] == [(400, 400), (3, 403)]
