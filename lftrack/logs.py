"""Structured logs: one JSON object per line, carrying the request id of the request being served."""
import json
import logging
import re
import time
import uuid
from contextvars import ContextVar

from django.http import HttpRequest, HttpResponse

request_id_var: ContextVar[str | None] = ContextVar("request_id", default=None)
# A proxy's X-Request-ID is kept only when it looks like an id: it is echoed into logs and headers.
_REQUEST_ID_RE = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
_STANDARD = set(vars(logging.makeLogRecord({})).keys()) | {"message", "asctime"}

access_logger = logging.getLogger("lftrack.access")


_QUERY = re.compile(r"\?[^\s\"']*")


class NoQueryStrings(logging.Filter):
    """On the output handler: a logged request is its method and path, never its query string or body.

    Query strings carry what people typed (an admin's search for an email address) and Django puts
    the whole request on its error records; runserver logs every request line. Both are cut here.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        request = getattr(record, "request", None)
        if request is not None and hasattr(request, "path"):
            record.request = f"{getattr(request, 'method', '?')} {request.path}"
        if record.name == "django.server" and record.args:
            record.args = tuple(_QUERY.sub("", arg) if isinstance(arg, str) else arg for arg in record.args)
        return True


class JsonFormatter(logging.Formatter):
    """`{"ts", "level", "logger", "message", "request_id", ...extra}`; tracebacks under `exc`."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": self.formatTime(record, "%Y-%m-%dT%H:%M:%S") + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        request_id = getattr(record, "request_id", None) or request_id_var.get()
        if request_id:
            entry["request_id"] = request_id
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                entry[key] = value
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)

    converter = time.gmtime


class RequestLogMiddleware:
    """Gives every request an id (X-Request-ID from the proxy, or a new one) and logs API requests.

    One line per /api/ request: method, path, status, duration, workspace id and request id. Never
    headers, bodies or query strings: they carry tokens and personal data.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        incoming = request.META.get("HTTP_X_REQUEST_ID", "")
        request_id = incoming if _REQUEST_ID_RE.match(incoming) else uuid.uuid4().hex
        token = request_id_var.set(request_id)
        started = time.perf_counter()
        try:
            response = self.get_response(request)
            response["X-Request-ID"] = request_id
            if request.path.startswith("/api/"):
                access_logger.info(
                    "request",
                    extra={
                        "method": request.method,
                        "path": request.path,
                        "status": response.status_code,
                        "duration_ms": round((time.perf_counter() - started) * 1000, 2),
                        "workspace_id": _workspace_id(request),
                        "request_id": request_id,
                    },
                )
            return response
        finally:
            request_id_var.reset(token)


def _workspace_id(request: HttpRequest) -> int | None:
    """The workspace the request was authenticated for (DRF copies `auth` onto the Django request)."""
    auth = getattr(request, "auth", None)
    return getattr(auth, "workspace_id", None)
