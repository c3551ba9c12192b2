"""gunicorn settings for lftrack: `gunicorn -c gunicorn.conf.py lftrack.wsgi`. Every value can be overridden by environment."""

import multiprocessing
import os
import shutil
import tempfile

# Two pools, one file (docs/deployment.md, "gunicorn"): GUNICORN_WORKER_CLASS picks the worker.
# gevent (the default, and the redirect's pool): one process per core, each serving up to
# GUNICORN_WORKER_CONNECTIONS connections as greenlets. A click waits on its batch's commit
# (lftrack/batching.py) without holding a thread, so a process gathers larger batches and spends no CPU
# switching threads (docs/benchmarks.md, "The redirect on gevent"). gunicorn's gevent worker
# monkey-patches the standard library before it loads the application, so threading's locks, threads
# and thread-locals (the batcher, the deadline watchdog, Django's connections) become greenlet ones,
# and psycopg (3.1.14 and later) and redis wait cooperatively.
# gthread (the API and back office pool behind deploy/nginx.conf): one process per core with a few
# threads each, so a process keeps its core busy while a thread waits on PostgreSQL or Redis; the
# CPU-bound API gains nothing from greenlets and a long page cannot stall a redirect in another pool
# (docs/benchmarks.md, "POST /api/v1/conversions"; bench/conversions.sh uses this file).
worker_class = os.environ.get("GUNICORN_WORKER_CLASS", "gevent")
# deploy/nginx.conf sends /l/ to 8000 (the redirect's pool) and the rest to 8001.
bind = os.environ.get("GUNICORN_BIND", "127.0.0.1:8000" if worker_class == "gevent" else "127.0.0.1:8001")
workers = int(os.environ.get("WEB_CONCURRENCY", multiprocessing.cpu_count()))
threads = int(os.environ.get("GUNICORN_THREADS", 4))
if worker_class == "gevent":
    # gevent's worker, closing a client connection's database connections when it ends (lftrack/gunicorn_worker.py).
    worker_class = "lftrack.gunicorn_worker.GeventWorker"
# Each connection is a greenlet, and each greenlet that writes a batch keeps a database connection of
# its own (Django's connections are per greenlet): workers x this stays under PostgreSQL's
# max_connections (100 by default, which 2 x 100 overran at 256 clients: docs/deployment.md, "gunicorn").
# Connections past it wait in the listen backlog, which is the back-pressure we want.
worker_connections = int(os.environ.get("GUNICORN_WORKER_CONNECTIONS", 40))
# A request that takes 30 s is stuck (a lost database); kill it rather than hold the worker.
timeout = int(os.environ.get("GUNICORN_TIMEOUT", 30))
# On SIGTERM or HUP (graceful reload) a worker finishes its requests for up to this long.
graceful_timeout = int(os.environ.get("GUNICORN_GRACEFUL_TIMEOUT", 30))
keepalive = int(os.environ.get("GUNICORN_KEEPALIVE", 5))
# Recycle workers now and then, with jitter so they do not all restart at once.
max_requests = int(os.environ.get("GUNICORN_MAX_REQUESTS", 20000))
max_requests_jitter = int(os.environ.get("GUNICORN_MAX_REQUESTS_JITTER", 2000))
loglevel = os.environ.get("GUNICORN_LOG_LEVEL", "info")
# gunicorn's own lines (starting, workers booting, timing out, dying) in the application's line format, on
# stderr with its lines (lftrack/logs.py; LOG_FORMAT=text for people, as in lftrack/settings.py). Its access
# log stays off unless GUNICORN_ACCESS_LOG=1: lftrack.access writes a line per API request already, and
# nginx one per request. On, it writes lftrack.access's fields, the path without its query string.
access_log_format = "%(m)s %(U)s %(s)s"
# Its access lines built only when GUNICORN_ACCESS_LOG is on (lftrack/gunicorn_worker.py).
logger_class = "lftrack.gunicorn_worker.Logger"
_TEXT = {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"} if os.environ.get("LOG_FORMAT") == "text" else None
logconfig_dict = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "lines": _TEXT or {"()": "lftrack.logs.JsonFormatter"},
        "access": _TEXT or {"()": "lftrack.logs.AccessFormatter"},
    },
    "handlers": {
        "lines": {"class": "logging.StreamHandler", "formatter": "lines", "stream": "ext://sys.stderr"},
        "access": {"class": "logging.StreamHandler", "formatter": "access", "stream": "ext://sys.stderr"},
    },
    "root": {"level": "WARNING", "handlers": ["lines"]},  # the application's settings replace it in each worker
    "loggers": {
        "gunicorn.error": {"level": loglevel.upper(), "handlers": ["lines"], "propagate": False},
        "gunicorn.access": {
            "level": "INFO" if os.environ.get("GUNICORN_ACCESS_LOG") == "1" else "WARNING",
            "handlers": ["access"],
            "propagate": False,
        },
    },
}
# The client address is decided by TRUSTED_PROXY_COUNT in Django, not by gunicorn.
forwarded_allow_ips = "127.0.0.1"

# Metrics (docs/metrics.md, "Under gunicorn"): every worker counts into its own files in PROMETHEUS_MULTIPROC_DIR
# and /metrics adds all of them up, so a scrape that reaches any one worker sees every worker's counts. Set
# before the workers start (they inherit it). Unset, a fresh directory of this master's own, removed when it
# stops; one the operator set is shared with the sender and the worker, and left as it is. A reload (HUP)
# reads this file again in the same master and keeps its directory; a new master of a binary upgrade (USR2)
# inherits the old one's variables and makes its own, which the old one's exit leaves alone.
_owner = os.environ.get("LFTRACK_METRICS_DIR_OWNER")
if not os.environ.get("PROMETHEUS_MULTIPROC_DIR") or (_owner and _owner != str(os.getpid())):
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="lftrack-metrics-")
    os.environ["LFTRACK_METRICS_DIR_OWNER"] = str(os.getpid())


def child_exit(server, worker):
    """A dead worker's gauges stop counting as live (its counters and histograms keep adding up, as they must)."""
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)


def on_exit(server):
    if os.environ.get("LFTRACK_METRICS_DIR_OWNER") == str(os.getpid()):
        shutil.rmtree(os.environ["PROMETHEUS_MULTIPROC_DIR"], ignore_errors=True)
