"""Fields of the v1 API: strict input fields (a JSON value taken as sent, messages naming the field) and the forms
every answer writes its values in (times in UTC, absent strings as null)."""

import json
from datetime import UTC
from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import URLValidator, validate_email
from django.utils.dateparse import parse_datetime
from rest_framework import serializers

BIGINT_MAX = 2**63 - 1


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


def aware_utc(raw: str):
    """An ISO 8601 time with an offset, in UTC (PostgreSQL refuses offsets past 15:59, which Python reads);
    None for anything else. A "+" arrives as a space when the caller did not encode it."""
    try:
        moment = parse_datetime(raw.replace(" ", "+"))
        return moment.astimezone(UTC) if moment is not None and moment.tzinfo is not None else None
    except (ValueError, OverflowError):
        return None
