"""lftrack's WSGI application with the redirect's batch size set by BENCH_MAX_BATCH, for bench/redirect.sh's
systems `gevent-N` (a gevent pool whose batches hold at most N clicks): measures the batch size PostgreSQL
handles best under the gevent worker, where batches are not capped by a thread count."""

import importlib
import os

from lftrack.wsgi import application  # noqa: F401

# Imported once lftrack.wsgi has set Django up (it defines models).
importlib.import_module("clicks.services")._visits.max_batch = int(os.environ["BENCH_MAX_BATCH"])
