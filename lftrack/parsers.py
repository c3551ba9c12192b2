"""Parsers of the v1 API's input: the body as one JSON object whose every string PostgreSQL can store, JSON
answers whatever Accept says, and `parse()`, which validates the object against an input serializer."""

import json
import math
import threading
from typing import Any

from rest_framework import serializers
from rest_framework.exceptions import ParseError
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.parsers import BaseParser

from lftrack.errors import Unprocessable, first_message


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
