"""OpenAPI 3 for the v1 API (drf-spectacular): strict-field types, auth schemes, errors, headers, the schema view."""

import copy
from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension, OpenApiSerializerFieldExtension
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import build_examples_list
from drf_spectacular.renderers import OpenApiJsonRenderer2
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema_serializer
from drf_spectacular.views import SpectacularAPIView
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.response import Response

from lftrack.fields import (
    JSONObjectField,
    StrictBooleanField,
    StrictCharField,
    StrictChoiceField,
    StrictEmailField,
    StrictIntegerField,
    StrictStringListField,
    StrictURLField,
)

# ---------------------------------------------------------------------------------------------
# Schema types of the strict input fields (lftrack/fields.py): they subclass serializers.Field, which
# drf-spectacular cannot type on its own.


def strict_field_schema(field: serializers.Field) -> dict[str, Any]:
    """The JSON Schema of one strict field, with the limits it enforces."""
    if isinstance(field, StrictIntegerField):
        return {"type": "integer", "format": "int64", "minimum": field.min_value, "maximum": field.max_value}
    if isinstance(field, StrictBooleanField):
        return {"type": "boolean"}
    if isinstance(field, StrictStringListField):
        items = {"type": "string", "maxLength": field.max_length}
        if field.choices:
            items = {"type": "string", "enum": list(field.choices)}
        return {"type": "array", "items": items, "maxItems": field.max_items}
    if isinstance(field, StrictChoiceField):
        return {"type": "string", "enum": list(field.choices)}
    if isinstance(field, JSONObjectField):
        return {
            "type": "object",
            "additionalProperties": {},
            "description": f"Any JSON object, stored as given; at most {field.max_bytes // 1024} KiB once serialized.",
        }
    schema: dict[str, Any] = {"type": "string", "maxLength": field.max_length}
    if not field.allow_blank:
        schema["minLength"] = 1
    if isinstance(field, StrictEmailField):
        schema["format"] = "email"
    elif isinstance(field, StrictURLField):
        schema["format"] = "uri"
        schema["description"] = "An absolute http or https URL."
    return schema


class _StrictFieldExtension(OpenApiSerializerFieldExtension):
    match_subclasses = True

    def map_serializer_field(self, auto_schema, direction) -> dict[str, Any]:
        return strict_field_schema(self.target)


class StrictCharFieldExtension(_StrictFieldExtension):
    target_class = StrictCharField  # StrictEmailField and StrictURLField too


class StrictIntegerFieldExtension(_StrictFieldExtension):
    target_class = StrictIntegerField


class StrictChoiceFieldExtension(_StrictFieldExtension):
    target_class = StrictChoiceField


class StrictBooleanFieldExtension(_StrictFieldExtension):
    target_class = StrictBooleanField


class StrictStringListFieldExtension(_StrictFieldExtension):
    target_class = StrictStringListField


class JSONObjectFieldExtension(_StrictFieldExtension):
    target_class = JSONObjectField


# ---------------------------------------------------------------------------------------------
# Security schemes


class BearerTokenScheme(OpenApiAuthenticationExtension):
    target_class = "workspaces.auth.BearerTokenAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema) -> dict[str, Any]:
        return {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "lf_ followed by 43 characters",
            "description": "A workspace API token (`Authorization: Bearer lf_...`; the scheme name is case-insensitive). "
            "Missing, malformed, unknown or revoked: 401 `unauthorized`.",
        }


class TrackingKeyScheme(OpenApiAuthenticationExtension):
    target_class = "workspaces.auth.TrackingKeyAuthentication"
    name = "trackingKey"

    def get_security_requirement(self, auto_schema) -> list[dict[str, list]]:
        # The header, or no header and the key in the body (`navigator.sendBeacon` cannot set headers).
        return [{self.name: []}, {}]

    def get_security_definition(self, auto_schema) -> dict[str, Any]:
        return {
            "type": "apiKey",
            "in": "header",
            "name": "X-Tracking-Key",
            "description": "The workspace's public tracking key, in this header or in the body field `key` "
            "(the header wins when both are sent). Missing or wrong: 401 `unauthorized`.",
        }


# ---------------------------------------------------------------------------------------------
# Errors: every non-2xx answer is {"error": <message>} (docs/api.md, lftrack/errors.py).


@extend_schema_serializer(component_name="Error")
class ErrorOut(serializers.Serializer):
    """Every error answer: exactly one key, its documented message."""

    error = serializers.CharField()


_ERRORS: dict[int, tuple[str, list[str]]] = {
    400: (
        "The body is not one JSON object (nested at most 100 levels deep, no NUL character or unpaired "
        "surrogate in its strings), or the request is malformed (a NUL in the URL or a header, a bad Content-Length).",
        ["invalid JSON", "bad request"],
    ),
    401: ("The credentials are missing, malformed, unknown or revoked.", ["unauthorized"]),
    403: (
        "Refused: the token was created with scopes that leave out this operation's (or, for the browser "
        "endpoint, the page's origin is not one the workspace allows).",
        ["forbidden"],
    ),
    404: ("Not found.", ["not found"]),
    413: ("The body is over 64 KiB; nothing was read or stored.", ["request too large"]),
    415: ("The Content-Type is not one this operation reads.", ["unsupported media type"]),
    422: ("The body is JSON but breaks a rule; nothing was stored.", []),
    429: ("Over a rate limit; retry after `Retry-After` seconds.", ["rate_limited"]),
    500: (
        "An unexpected error; the message never carries details (quote the `X-Request-ID` to the operator).",
        ["internal error"],
    ),
    503: (
        "The database could not be reached in time; nothing was stored. Retry after `Retry-After` seconds "
        "(with the same `Idempotency-Key`, where the operation takes one).",
        ["service unavailable"],
    ),
}


def _error_text(status: int, messages: list[str] | None) -> tuple[str, list[str]]:
    description, defaults = _ERRORS[status]
    listed = messages or defaults
    return description + " Messages: " + ", ".join(f"`{m}`" for m in listed) + ".", listed


def _error_examples(status: int, messages: list[str]) -> list[OpenApiExample]:
    return [OpenApiExample(m, value={"error": m}, response_only=True, status_codes=[status]) for m in messages]


def error_responses(*statuses: int, **messages: list[str]) -> dict[int, OpenApiResponse]:
    """`{status: response}` for `extend_schema(responses=...)`; `e422=[...]` lists the messages of one status."""
    responses = {}
    for status in statuses:
        description, listed = _error_text(status, messages.get(f"e{status}"))
        responses[status] = OpenApiResponse(ErrorOut, description=description, examples=_error_examples(status, listed))
    return responses


def error_response_object(status: int, messages: list[str] | None = None) -> dict[str, Any]:
    """The same response as a plain OpenAPI object, for operations a view writes by hand."""
    description, listed = _error_text(status, messages)
    media = {
        "schema": {"$ref": "#/components/schemas/Error"},
        "examples": build_examples_list(_error_examples(status, listed)),
    }
    return {"description": description, "content": {"application/json": media}}


def string_messages(*fields: str) -> list[str]:
    """The type and length messages of strict string fields, as lftrack.fields._NamedMessages writes them."""
    return [message for field in fields for message in (f"{field} must be a string", f"{field} is too long")]


# ---------------------------------------------------------------------------------------------
# Headers, added to every operation by `postprocess` from what each operation documents.

HEADERS: dict[str, dict[str, Any]] = {
    "X-Request-ID": {
        "description": "The request's id, also in every log line written while serving it: the caller's "
        "`X-Request-ID` when it is 1 to 128 of `A-Z a-z 0-9 . _ : -`, a new one otherwise.",
        "schema": {"type": "string"},
    },
    "Retry-After": {
        "description": "Whole seconds to wait before retrying: until the limit's window resets (429), or a "
        "moment for the database to come back (503).",
        "required": True,
        "schema": {"type": "integer", "minimum": 1},
    },
    "X-RateLimit-Limit": {
        "description": "Requests allowed per window by the tightest limit that applies (absent when the "
        "rate-limit cache is unreachable: limits then fail open).",
        "schema": {"type": "integer", "minimum": 0},
    },
    "X-RateLimit-Remaining": {
        "description": "Requests left in the window of that limit.",
        "schema": {"type": "integer", "minimum": 0},
    },
    "WWW-Authenticate": {
        "description": "The scheme to authenticate with: `Bearer`, or `Tracking-Key` on the pixel's endpoint.",
        "schema": {"type": "string"},
    },
    "Idempotent-Replayed": {
        "description": "`true` when this is the stored answer to an earlier request with the same `Idempotency-Key`, "
        "or the first sale of the same `invoice_id`.",
        "schema": {"type": "string", "enum": ["true"]},
    },
    "Access-Control-Allow-Origin": {
        "description": "The request's `Origin`, when it is one of the workspace's allowed origins.",
        "schema": {"type": "string"},
    },
    "Vary": {"description": "`Origin`: the CORS headers depend on it.", "schema": {"type": "string"}},
}
REQUEST_ID_PARAMETER = {
    "in": "header",
    "name": "X-Request-ID",
    "required": False,
    "description": "An id set by a proxy, kept when it is 1 to 128 of `A-Z a-z 0-9 . _ : -` (replaced otherwise) "
    "and echoed in the response header of the same name.",
    "schema": {"type": "string"},
}


def _header_refs(*names: str) -> dict[str, dict[str, str]]:
    return {name: {"$ref": f"#/components/headers/{name}"} for name in names}


def _response_headers(status: str, operation: dict) -> dict[str, dict[str, str]]:
    """The headers lftrack's code puts on this response of this operation."""
    names = ["X-Request-ID"]
    if status == "401":
        names.append("WWW-Authenticate")
    if status == "429":
        names += ["Retry-After", "X-RateLimit-Limit", "X-RateLimit-Remaining"]
    if status == "503":
        names.append("Retry-After")
    if status.startswith("2"):
        if "429" in operation.get("responses", {}):  # lftrack.ratelimit reports the tightest limit
            names += ["X-RateLimit-Limit", "X-RateLimit-Remaining"]
        if any(p.get("name") == "Idempotency-Key" for p in operation.get("parameters", [])):
            names.append("Idempotent-Replayed")
    if any("trackingKey" in requirement for requirement in operation.get("security", [])):
        names += ["Vary", "Access-Control-Allow-Origin"]
    return _header_refs(*names)


def _closed(schema: dict, schemas: dict, seen: set[str]) -> None:
    """No keys beyond the documented ones in what lftrack answers: every response body is built explicitly."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        if name not in seen:
            seen.add(name)
            _closed(schemas[name], schemas, seen)
        return
    for part in schema.get("allOf", []) + schema.get("oneOf", []) + schema.get("anyOf", []):
        _closed(part, schemas, seen)
    if schema.get("type") == "object" and "properties" in schema:
        schema["additionalProperties"] = False
        for prop in schema["properties"].values():
            _closed(prop, schemas, seen)


def postprocess(result: dict, generator, request, public) -> dict:
    """drf-spectacular POSTPROCESSING_HOOK: headers, operations views declare by hand, closed response bodies."""
    components = result.setdefault("components", {})
    components["headers"] = dict(HEADERS)
    schemas = components.get("schemas", {})
    for path, _regex, _method, callback in generator.endpoints:
        # OPTIONS never reaches drf-spectacular's inspection: a view describes it (the CORS preflight).
        for method, operation in getattr(callback.cls, "openapi_extra_operations", {}).items():
            result["paths"].setdefault(path, {})[method] = copy.deepcopy(operation)
    closed: set[str] = set()
    for item in result["paths"].values():
        for operation in item.values():
            operation.setdefault("parameters", []).append(dict(REQUEST_ID_PARAMETER))
            for status, response in operation["responses"].items():
                response["headers"] = {**_response_headers(status, operation), **response.get("headers", {})}
                for media in response.get("content", {}).values():
                    _closed(media["schema"], schemas, closed)
    return result


# ---------------------------------------------------------------------------------------------
# GET /api/v1/openapi.json


class OpenApiView(SpectacularAPIView):
    """The schema as `application/json`, public, generated once per process: it only changes with the code,
    and this endpoint needs no credentials, so it must stay cheap."""

    authentication_classes: list = []
    permission_classes = [AllowAny]
    renderer_classes = [OpenApiJsonRenderer2]
    _schema: dict | None = None

    def _get_schema_response(self, request) -> Response:
        if OpenApiView._schema is None:
            # request=None: the same document `manage.py spectacular` writes to docs/openapi.json.
            generator = self.generator_class(urlconf=self.urlconf, patterns=self.patterns)
            OpenApiView._schema = generator.get_schema(request=None, public=True)
        return Response(OpenApiView._schema)


class PagedAutoSchema(AutoSchema):
    """For a ViewSet whose `list` answers one object (`data` and a `next` cursor), not a bare array."""

    def _is_list_view(self, serializer=None) -> bool:
        return False


# The read API's paging parameters (lftrack/pagination.py, page_position).
PAGE_PARAMETERS = [
    OpenApiParameter("limit", int, description="Items per page, 1 to 100; 50 by default."),
    OpenApiParameter("cursor", str, description="The `next` of the previous page."),
]


def page_of(item: type, component_name: str) -> type:
    """The serializer of a read API page, `{"data": [item...], "next": cursor | null}`, named in the schema."""
    fields = {
        "data": item(many=True),
        "next": serializers.CharField(
            allow_null=True, help_text="The `cursor` of the next page; null on the last one."
        ),
    }
    return extend_schema_serializer(component_name=component_name)(
        type(f"{component_name}Out", (serializers.Serializer,), fields)
    )
