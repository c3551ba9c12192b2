"""Run by tests/test_batching.py in a process of its own: lftrack.batching under gevent's monkey-patching, as
gunicorn's gevent worker runs it. Prints what happened as one JSON object."""

from gevent import monkey

monkey.patch_all()

import json  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

import gevent  # noqa: E402

from lftrack.batching import Abandoned, Batcher  # noqa: E402

GREENLETS = int(sys.argv[1])
batches: list[list[int]] = []
stall = threading.Event()  # set: a write takes 2 s (a stalled database), with the hub free meanwhile


def write(items):
    batches.append(list(items))
    time.sleep(2 if stall.is_set() else 0.002)  # a commit's wait: other greenlets run meanwhile
    return [item * 10 for item in items]


batcher = Batcher(write, max_batch=16)


def click(n: int, timeout: float | None) -> tuple[str, float]:
    started = time.monotonic()
    try:
        answer = batcher.submit(n, timeout=timeout)
    except Abandoned:
        answer = "abandoned"
    return answer, time.monotonic() - started


running = [gevent.spawn(click, n, None) for n in range(GREENLETS)]
gevent.joinall(running, timeout=30)
answers = [g.value[0] for g in running]
fast = {"answers_right": answers == [n * 10 for n in range(GREENLETS)], "batches": [len(b) for b in batches]}

batches.clear()
stall.set()
started = time.monotonic()
running = [gevent.spawn(click, n, 0.5) for n in range(GREENLETS)]
gevent.joinall(running, timeout=30)
stalled = {
    "answers": [g.value[0] for g in running],
    "slowest_abandoned": max((g.value[1] for g in running if g.value[0] == "abandoned"), default=0),
    "written": sorted(item for batch in batches for item in batch),
    "seconds": time.monotonic() - started,
}
print(json.dumps({"fast": fast, "stalled": stalled}))
