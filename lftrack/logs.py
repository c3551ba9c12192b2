"""Structured logs: one JSON object per line, carrying the request id of the request being served."""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING

import pythonjsonlogger.json

# gunicorn's master imports the formatters (gunicorn.conf.py's logconfig_dict) before it forks: no Django
# there, since the gevent worker's monkey-patching inspects every object and would set Django's settings up.
if TYPE_CHECKING:
    from django.http import HttpRequest, HttpResponse

request_id_var: ContextVar[str | None] = ContextVar("request_id", default=None)
# A proxy's X-Request-ID is kept only when it looks like an id: it is echoed into logs and headers.
_REQUEST_ID_RE = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")

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


class JsonFormatter(pythonjsonlogger.json.JsonFormatter):
    """python-json-logger's formatter: `{"ts", "level", "logger", "message", "request_id", ...extra}` with the
    time in UTC to the millisecond, tracebacks under `exc`, and the id of the request being served."""

    default_time_format = "%Y-%m-%dT%H:%M:%S"
    default_msec_format = "%s.%03dZ"
    converter = time.gmtime

    def __init__(self, *args, **kwargs):
        super().__init__(
            "{asctime}{levelname}{name}{message}",
            style="{",
            rename_fields={"asctime": "ts", "levelname": "level", "name": "logger", "exc_info": "exc"},
            json_default=str,
        )

    def add_fields(self, log_data: dict, record: logging.LogRecord, message_dict: dict) -> None:
        super().add_fields(log_data, record, message_dict)
        if not log_data.get("request_id") and (request_id := request_id_var.get()):
            log_data["request_id"] = request_id


class AccessFormatter(JsonFormatter):
    """gunicorn's access lines (off unless GUNICORN_ACCESS_LOG=1, gunicorn.conf.py) with lftrack.access's
    fields, from the atoms gunicorn logs them with: method, path (never the query), status, duration."""

    def add_fields(self, log_data: dict, record: logging.LogRecord, message_dict: dict) -> None:
        super().add_fields(log_data, record, message_dict)
        atoms = record.args if isinstance(record.args, Mapping) else {}
        if atoms:
            log_data.update(
                method=atoms["m"],
                path=atoms["U"],
                status=int(atoms["s"]),
                duration_ms=round(atoms["D"] / 1000, 2),
                request_id=atoms["{x-request-id}o"],
            )


class JobLines(logging.Filter):
    """On the output handler: the task engine's worker writes one line per job, when it ends (its task, job
    id, attempts, duration and outcome; ERROR with the traceback for a failure), not also one when it starts;
    and the task's name and ids rather than the engine's whole job and worker records."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.name.startswith("procrastinate.worker"):
            return True
        fields = record.__dict__
        if fields.get("action") == "start_job":
            return False
        fields.pop("worker", None)
        if job := fields.pop("job", None):
            record.task, record.job_id, record.attempts = job["task_name"], job["id"], job["attempts"]
        if (duration := fields.pop("duration", None)) is not None:
            record.duration_ms = round(duration * 1000, 2)
        for name in ("start_timestamp", "end_timestamp"):
            fields.pop(name, None)
        return True


def request_id_of(meta: dict) -> str:
    """The request's id: the proxy's X-Request-ID when it looks like one, else a new one."""
    incoming = meta.get("HTTP_X_REQUEST_ID", "")
    return incoming if _REQUEST_ID_RE.match(incoming) else uuid.uuid4().hex


class RequestLogMiddleware:
    """Gives every request an id (X-Request-ID from the proxy, or a new one) and logs API requests.

    One line per /api/ request: method, path, status, duration, workspace id and request id. Never
    headers, bodies or query strings: they carry tokens and personal data.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request_id = request_id_of(request.META)
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
