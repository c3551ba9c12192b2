"""Hot-path SQL: cursors whose statements PostgreSQL parses and plans once per connection, not per request."""

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TypeVar

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.postgresql.base import ServerBindingCursor
from django.db.models import Model, Q
from django.db.models.base import DEFERRED
from psycopg.raw_cursor import RawCursorMixin
from psycopg.rows import namedtuple_row

M = TypeVar("M", bound=Model)


class _PreparingCursor(ServerBindingCursor):
    """Binds parameters server-side and prepares every statement it runs (psycopg keeps them per connection)."""

    def execute(self, query, params=None, *, prepare=None, binary=None):
        return super().execute(query, params, prepare=True if prepare is None else prepare, binary=binary)


class _PreparingNumberedCursor(RawCursorMixin, _PreparingCursor):
    """The same for statements written with PostgreSQL's own `$1` placeholders, sent as they are written: psycopg
    parses a `%s` statement for its placeholders on every execution once it has more than 50 parameters (it
    keeps the result only below that), which cost the redirect's statement for 8 clicks (80 parameters)
    1.3 M instructions more (docs/benchmarks.md, "One statement for a batch of clicks")."""


class _NumberedCursor(RawCursorMixin, ServerBindingCursor):
    """`$1` placeholders, never prepared (DB_PREPARED_STATEMENTS=0)."""


def lift_timeouts(*, using: str = DEFAULT_DB_ALIAS) -> None:
    """No statement or lock timeout for the rest of this connection's session: for migrations and the
    roll-ups, whose statements may run long by design (the web's deadlines are lftrack/settings.py's)."""
    with connections[using].cursor() as cursor:
        cursor.execute("SET statement_timeout = 0")
        cursor.execute("SET lock_timeout = 0")


@contextmanager
def prepared_cursor(*, numbered: bool = False) -> Iterator:
    """A Django cursor for the few statements every API request and every click runs; `numbered` for
    statements written with `$1` placeholders instead of `%(name)s`. Its rows are named tuples (psycopg's
    `namedtuple_row`): hand SQL reads its results by column name, never by position.

    Django's PostgreSQL cursors bind parameters client-side: each statement reaches the server as new
    text, parsed and planned again, and formatting the literals costs Python time too. This cursor
    sends the parameters separately and prepares the statement on first use, so later requests on
    the same persistent connection only bind and execute. It is still Django's cursor wrapper (query
    logging, execute wrappers, Django's exception classes) inside Django's transaction. Connection
    poolers in transaction mode that cannot carry prepared statements: set DB_PREPARED_STATEMENTS=0.

    Not Django's connection pool with `server_side_binding` and psycopg's own preparation instead: in
    one sitting (`bench/conversions.sh`, 15 s, twice) the pool ran 578/682 req/s without health checks
    and 655/475 with them, against 610/663 here, the same CPU per request within the noise; and its
    checks are a round trip per request, where `lftrack/postgresql` asks the socket (docs/benchmarks.md,
    "Library swaps").
    """
    db = connections[DEFAULT_DB_ALIAS]  # one thread-local lookup, not one per attribute
    if not settings.DB_PREPARED_STATEMENTS and not numbered:
        with sql_cursor() as cursor:
            yield cursor
        return
    if numbered:
        cursor_class = _PreparingNumberedCursor if settings.DB_PREPARED_STATEMENTS else _NumberedCursor
    else:
        cursor_class = _PreparingCursor
    # What connection.cursor() does, with our cursor class: health check, connect, wrap.
    db.close_if_health_check_failed()
    db.ensure_connection()
    raw = db.connection
    if raw.prepare_threshold is None:
        # Django switches psycopg's statement preparation off (for poolers) on every connection it
        # opens. Only server-side binding cursors (this one) can prepare; Django's client-side
        # cursors never do, so switching it back on changes nothing for them.
        raw.prepare_threshold = 5
    with db.wrap_database_errors:
        db.validate_thread_sharing()
        raw_cursor = cursor_class(raw, row_factory=namedtuple_row)
        cursor = db.make_debug_cursor(raw_cursor) if db.queries_logged else db.make_cursor(raw_cursor)
    with cursor:
        yield cursor


@contextmanager
def sql_cursor() -> Iterator:
    """Django's own cursor (client-side binding, never prepared) for hand SQL off the hot paths, with named rows
    as `prepared_cursor`'s."""
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.cursor.row_factory = namedtuple_row
        yield cursor


def from_row(model: type[M], row: Mapping[str, Any], *, using: str = DEFAULT_DB_ALIAS, **related: Model | None) -> M:
    """The instance of `model` for a row that hand SQL read or wrote (`row`: attname -> value, other keys ignored),
    as Django's own queries build it (`Model.from_db`: saved, of database `using`); the fields the row lacks are
    deferred (read on first access). `related`: objects already at hand for its foreign keys (`workspace=ws`), so
    that reading them costs no query.

    The one place that makes model instances out of hand SQL's rows: an INSERT ... RETURNING's instance is built
    from the values it sent and the columns it returned, with no round trip to read back what it just wrote
    (docs/benchmarks.md, "Hand-written SQL")."""
    values = [row.get(field.attname, DEFERRED) for field in model._meta.concrete_fields]
    instance = model.from_db(using, None, values)  # every field given (DEFERRED or not): field names unused
    for name, value in related.items():
        setattr(instance, name, value)
    return instance


def after_keyset(field: str, after: tuple) -> Q:
    """Rows past the keyset (time, id) in newest-first order of (`field`, id): the read API's pages."""
    moment, pk = after
    return Q(**{f"{field}__lt": moment}) | Q(**{field: moment, "pk__lt": pk})


def as_id(value: object) -> int | None:
    """A primary key written in a URL (a path or query parameter), or None: ASCII digits only (int() takes "²" and
    refuses thousands of digits with a ValueError, a 500), within a bigint."""
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 19 and int(value) < 2**63:
        return int(value)
    return None
