"""gunicorn settings for lftrack: `gunicorn -c gunicorn.conf.py lftrack.wsgi`. Every value can be overridden by environment."""
import multiprocessing
import os

bind = os.environ.get("GUNICORN_BIND", "127.0.0.1:8000")
# One process per core (Python runs one thread at a time per process) with a few threads each, so a
# process keeps its core busy while a thread waits on PostgreSQL or Redis; threads also keep client
# connections alive. The shape measured in docs/benchmarks.md (bench/conversions.sh uses this file).
workers = int(os.environ.get("WEB_CONCURRENCY", multiprocessing.cpu_count()))
threads = int(os.environ.get("GUNICORN_THREADS", 4))
# A request that takes 30 s is stuck (a lost database); kill it rather than hold the worker.
timeout = int(os.environ.get("GUNICORN_TIMEOUT", 30))
# On SIGTERM or HUP (graceful reload) a worker finishes its requests for up to this long.
graceful_timeout = int(os.environ.get("GUNICORN_GRACEFUL_TIMEOUT", 30))
keepalive = int(os.environ.get("GUNICORN_KEEPALIVE", 5))
# Recycle workers now and then, with jitter so they do not all restart at once.
max_requests = int(os.environ.get("GUNICORN_MAX_REQUESTS", 20000))
max_requests_jitter = int(os.environ.get("GUNICORN_MAX_REQUESTS_JITTER", 2000))
# Our middleware writes one JSON line per API request; gunicorn's access log would repeat it.
accesslog = None
errorlog = "-"
loglevel = os.environ.get("GUNICORN_LOG_LEVEL", "info")
# The client address is decided by TRUSTED_PROXY_COUNT in Django, not by gunicorn.
forwarded_allow_ips = "127.0.0.1"
