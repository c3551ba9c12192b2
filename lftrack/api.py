"""API plumbing shared by every v1 endpoint: the JSON parser, strict input fields and `parse()`."""

import json
import math
import threading
from base64 import urlsafe_b64decode, urlsafe_b64encode
from datetime import UTC
from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import URLValidator, validate_email
from django.utils.dateparse import parse_datetime
from rest_framework import serializers
from rest_framework.exceptions import ParseError
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.parsers import BaseParser

from lftrack.errors import Unprocessable, first_message
from lftrack.ratelimit import Limit, ip_key, token_key

BIGINT_MAX = 2**63 - 1


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


# RFC 8259 section 9 lets a parser limit nesting. A deeper document would pass json.loads but overflow
# the recursion of the encoders that run later, deeper in the stack (meta's size check, the jsonb
# adapter): a 500 instead of a 400.
MAX_JSON_DEPTH = 100


def _storable(value: Any) -> bool:
    """True when the document nests at most MAX_JSON_DEPTH deep and every string can be stored as PostgreSQL text/jsonb."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            # NUL is refused by PostgreSQL text and jsonb; lone surrogates cannot be encoded as UTF-8.
            if "\x00" in item or (not item.isascii() and _has_surrogate(item)):
                return False
        elif isinstance(item, (dict, list)):
            if depth > MAX_JSON_DEPTH:
                return False
            children = [*item.keys(), *item.values()] if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
        elif isinstance(item, float) and not math.isfinite(item):
            return False
    return True


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def decode_json_object(raw: bytes) -> dict:
    """Decode a request body that must be one JSON object; anything else is 400 "invalid JSON"."""
    try:
        data = json.loads(raw, parse_constant=_reject_constant)
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        raise ParseError("invalid JSON") from None
    if not isinstance(data, dict) or not _storable(data):
        raise ParseError("invalid JSON")
    return data


class JSONObjectParser(BaseParser):
    """application/json whose top level is an object, with every string storable."""

    media_type = "application/json"

    def parse(self, stream, media_type=None, parser_context=None) -> dict:
        return decode_json_object(stream.read() if stream is not None else b"")


class PlainTextJSONParser(JSONObjectParser):
    """`text/plain` holding a JSON object: what `navigator.sendBeacon` and preflight-free `fetch` send."""

    media_type = "text/plain"


class JSONOnlyNegotiation(BaseContentNegotiation):
    """Always answer JSON, whatever Accept says (no 406s for odd clients)."""

    def select_parser(self, request, parsers):
        for parser in parsers:
            if request.content_type.split(";")[0].strip().lower() == parser.media_type:
                return parser
        return None

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


def request_json(request) -> dict:
    """The request body as a dict; an empty body is invalid JSON, not an empty object."""
    data = request.data  # runs the parser: 415 for other media types, 400 for bad JSON
    if request.stream is None:
        raise ParseError("invalid JSON")
    return data


# Per thread: each input serializer class's bound fields, built once (see parse()).
_fields = threading.local()


def parse(serializer_class: type[serializers.Serializer], data: dict) -> dict:
    """Validate `data`; the first error becomes 422 with its documented message.

    DRF deep-copies every declared field (running each field's __init__ again) for every serializer
    instance: about a tenth of an API request's Python time. The input serializers here are stateless
    validators (no context, no instance, nothing kept between calls), so each thread builds a
    class's fields once and lends them to every later instance.
    """
    serializer = serializer_class(data=data)
    built = _fields.__dict__
    if serializer_class in built:
        serializer.__dict__["fields"] = built[serializer_class]  # DRF's cached_property slot
    else:
        built[serializer_class] = serializer.fields
    if not serializer.is_valid():
        raise Unprocessable(first_message(serializer.errors))
    return serializer.validated_data


class _NamedMessages:
    """Mixin: default error messages that name the field, unless the caller gave their own."""

    def __init__(self, *args, **kwargs):
        self._explicit_messages = dict(kwargs.get("error_messages") or {})
        super().__init__(*args, **kwargs)

    def bind(self, field_name, parent):
        super().bind(field_name, parent)
        named = {
            "required": f"{field_name} is required",
            "null": f"{field_name} is required",
            "invalid": f"{field_name} must be a string",
            "too_long": f"{field_name} is too long",
            "blank": f"{field_name} is required",
        }
        self.error_messages = {**self.error_messages, **named, **self._explicit_messages}


class StrictCharField(_NamedMessages, serializers.Field):
    """A JSON string taken as sent: numbers are not coerced and spaces are not trimmed."""

    def __init__(self, *, max_length: int, allow_blank: bool = True, **kwargs):
        self.max_length = max_length
        self.allow_blank = allow_blank
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        if len(data) > self.max_length:
            self.fail("too_long")
        if not data and not self.allow_blank:
            self.fail("blank")
        return data

    def to_representation(self, value: Any) -> Any:
        return value


class StrictEmailField(StrictCharField):
    def __init__(self, **kwargs):
        kwargs.setdefault("max_length", 254)
        super().__init__(**kwargs)

    def bind(self, field_name, parent):
        super().bind(field_name, parent)
        self.error_messages.setdefault("invalid_email", "invalid email")

    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        if value:
            try:
                validate_email(value)
            except DjangoValidationError:
                self.fail("invalid_email")
        return value


class StrictURLField(StrictCharField):
    """An absolute http(s) URL."""

    _validator = URLValidator(schemes=["http", "https"])

    def bind(self, field_name, parent):
        super().bind(field_name, parent)
        self.error_messages.setdefault("invalid_url", f"{field_name} must be an http or https URL")

    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        if value:
            try:
                self._validator(value)
            except DjangoValidationError:
                self.fail("invalid_url")
        return value


class StrictIntegerField(_NamedMessages, serializers.Field):
    """A JSON integer (not a float, string or boolean) within [min_value, max_value]; above max_value its
    `too_large` message, when given, else `invalid`."""

    def __init__(self, *, min_value: int = 0, max_value: int = BIGINT_MAX, **kwargs):
        self.min_value = min_value
        self.max_value = max_value
        super().__init__(**kwargs)

    def bind(self, field_name, parent):
        super().bind(field_name, parent)
        if "invalid" not in self._explicit_messages:
            self.error_messages["invalid"] = f"{field_name} must be an integer"
        self.error_messages.setdefault("too_large", self.error_messages["invalid"])

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool) or not isinstance(data, int) or data < self.min_value:
            self.fail("invalid")
        if data > self.max_value:
            self.fail("too_large")
        return data

    def to_representation(self, value: Any) -> Any:
        return value


class StrictBooleanField(_NamedMessages, serializers.Field):
    """A JSON true or false (not 1, "true" or null)."""

    def bind(self, field_name, parent):
        super().bind(field_name, parent)
        if "invalid" not in self._explicit_messages:
            self.error_messages["invalid"] = f"{field_name} must be a boolean"

    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid")
        return data

    def to_representation(self, value: Any) -> Any:
        return value


class StrictStringListField(_NamedMessages, serializers.Field):
    """A JSON array of at most `max_items` strings, each at most `max_length` long."""

    def __init__(self, *, max_items: int, max_length: int, choices: list[str] | None = None, **kwargs):
        self.max_items = max_items
        self.max_length = max_length
        self.choices = choices  # documented in the schema; the service says which one is unknown
        super().__init__(**kwargs)

    def bind(self, field_name, parent):
        super().bind(field_name, parent)
        if "invalid" not in self._explicit_messages:
            self.error_messages["invalid"] = f"{field_name} must be a list of strings"

    def to_internal_value(self, data: Any) -> list[str]:
        if not isinstance(data, list) or not all(isinstance(item, str) for item in data):
            self.fail("invalid")
        if len(data) > self.max_items or any(len(item) > self.max_length for item in data):
            self.fail("too_long")
        return data

    def to_representation(self, value: Any) -> Any:
        return value


class JSONObjectField(_NamedMessages, serializers.Field):
    """Any JSON object, kept as given, up to `max_bytes` once serialized."""

    def __init__(self, *, max_bytes: int, **kwargs):
        self.max_bytes = max_bytes
        super().__init__(**kwargs)

    def bind(self, field_name, parent):
        super().bind(field_name, parent)
        if "invalid" not in self._explicit_messages:
            self.error_messages["invalid"] = f"{field_name} must be an object"

    def to_internal_value(self, data: Any) -> dict:
        if not isinstance(data, dict):
            self.fail("invalid")
        if len(json.dumps(data, ensure_ascii=False).encode()) > self.max_bytes:
            self.fail("too_long")
        return data

    def to_representation(self, value: Any) -> Any:
        return value


class StrictChoiceField(_NamedMessages, serializers.Field):
    """One of `choices`; anything else (missing, wrong type, unknown value) fails with `invalid`."""

    def __init__(self, *, choices: list[str], **kwargs):
        self.choices = choices
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str) or data not in self.choices:
            self.fail("invalid")
        return data

    def to_representation(self, value: Any) -> Any:
        return value


def iso_utc(moment) -> str:
    """ISO 8601 in UTC with a `Z`, as every timestamp in the API is written."""
    return moment.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def optional(value: str | None) -> str | None:
    """Absent optional strings are stored empty and answered as null (docs/api.md)."""
    return value or None


# ---------------------------------------------------------------------------------------------
# The read API's pages (GET /api/v1/conversions, /customers): query parameters, keyset cursors, limits.

# Reads per token, and per address counting refused credentials too, as for the writes.
READ_LIMITS = (Limit("reads-token", token_key, "RATELIMIT_READ_TOKEN"), Limit("reads-ip", ip_key, "RATELIMIT_READ_IP"))
PAGE_LIMIT_MAX = 100
PAGE_ERRORS = [f"limit must be 1 to {PAGE_LIMIT_MAX}", "invalid cursor"]


def query_int(params, name: str, *, high: int = BIGINT_MAX) -> int | None:
    """A positive integer query parameter; None when absent; 422 `<name> must be an integer` otherwise."""
    raw = params.get(name)
    if raw is None:
        return None
    # ASCII digits only, and few of them: int() refuses "²" and 5,000-digit strings with a ValueError (a 500).
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 19) or not 1 <= int(raw) <= high:
        raise Unprocessable(f"{name} must be an integer")
    return int(raw)


def aware_utc(raw: str):
    """An ISO 8601 time with an offset, in UTC (PostgreSQL refuses offsets past 15:59, which Python reads);
    None for anything else. A "+" arrives as a space when the caller did not encode it."""
    try:
        moment = parse_datetime(raw.replace(" ", "+"))
        return moment.astimezone(UTC) if moment is not None and moment.tzinfo is not None else None
    except (ValueError, OverflowError):
        return None


def query_time(params, name: str):
    """A time query parameter; None when absent; 422 `<name> must be an ISO 8601 time with an offset` otherwise."""
    raw = params.get(name)
    if raw is None:
        return None
    moment = aware_utc(raw)
    if moment is None:
        raise Unprocessable(f"{name} must be an ISO 8601 time with an offset")
    return moment


def cursor_encode(*keyset) -> str:
    """A keyset (a time, then integers) as an opaque cursor."""
    moment, *numbers = keyset
    return urlsafe_b64encode("|".join([moment.isoformat(), *map(str, numbers)]).encode()).decode().rstrip("=")


def page_position(params, *, ranked: bool = False) -> tuple[int, tuple | None]:
    """(limit, keyset after which the page starts) from `limit` (1 to 100, 50) and `cursor`: (time, id), or
    (time, rank, id) where rows of several sources are merged."""
    raw = params.get("limit")
    if raw is not None and (
        not (raw.isascii() and raw.isdigit() and len(raw) <= 3) or not 1 <= int(raw) <= PAGE_LIMIT_MAX
    ):
        raise Unprocessable(f"limit must be 1 to {PAGE_LIMIT_MAX}")
    cursor = params.get("cursor")
    if not cursor:
        return int(raw or 50), None
    try:
        moment, *numbers = urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode().split("|")
        at = aware_utc(moment)
        if (
            at is None
            or len(numbers) != (2 if ranked else 1)
            or not all(n.isdigit() and int(n) <= BIGINT_MAX for n in numbers)
        ):
            raise ValueError
    except (ValueError, UnicodeDecodeError):
        raise Unprocessable("invalid cursor") from None
    return int(raw or 50), (at, *map(int, numbers))


def page_out(rows: list, limit: int, item_out, *, at) -> dict:
    """`{"data": [...], "next": cursor | null}` from `limit` + 1 rows; `at(row)` is the row's keyset time."""
    data, more = rows[:limit], len(rows) > limit
    return {"data": [item_out(row) for row in data], "next": cursor_encode(at(data[-1]), data[-1].pk) if more else None}
