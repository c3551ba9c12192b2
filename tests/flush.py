"""The flush after each transactional test: DELETE from the tables that hold rows, instead of Django's TRUNCATE of all.

Django empties the database after a `transaction=True` test with one TRUNCATE of every table (52) and then
re-creates the content types and permissions (post_migrate). On PostgreSQL a TRUNCATE gives each table and
each of its indexes (213) new files, so the flush cost 1.3 to 3 s however little the test wrote, most of
the transactional tests' time (docs/development.md, "Transactional tests"). This flush leaves the database
exactly as Django's does: the same tables (Django's own list) emptied, sequences not reset, and the
content types and permissions as post_migrate makes them. It finds the tables with rows in one query,
deletes their rows with triggers off (as TRUNCATE fires none: the roll-up triggers must not log the
deletions, and foreign keys are not checked), and keeps the content types and permissions when they are
still, row for row, what post_migrate made after the last full flush. Anything else (available_apps,
serialized_rollback, another post_migrate receiver, a role that may not switch triggers off) takes Django's own flush.
"""

from collections.abc import Callable

from django.core.management.sql import emit_post_migrate_signal
from django.db import connections, transaction
from django.db.backends.utils import CursorWrapper
from django.db.models.signals import post_migrate
from django.test import TransactionTestCase

# The receivers whose work a kept content type and permission table stands for; any other: Django's flush.
_POST_MIGRATE = {
    "django.contrib.auth.management.create_permissions",
    "django.contrib.contenttypes.management.create_contenttypes",
}
_MADE = ("django_content_type", "auth_permission")  # what post_migrate writes
_django_flush = TransactionTestCase._fixture_teardown
# Per database: the content types and permissions as the last post_migrate left them (a digest), and
# whether the role may turn triggers off (a superuser, as in CI and the embedded server).
_made_digest: dict[str, str] = {}
_may_skip_triggers: dict[str, bool] = {}


def _receivers() -> set[str]:
    return {f"{r.__module__}.{r.__qualname__}" for r in post_migrate._live_receivers(None)[0]}


def _fixture_teardown(self: TransactionTestCase) -> None:
    aliases = list(self._databases_names(include_mirrors=False))
    if (
        self.available_apps is not None
        or self.serialized_rollback
        or _receivers() != _POST_MIGRATE
        or not all(_superuser(alias) for alias in aliases)
    ):
        return _django_flush(self)
    for alias in aliases:
        tables_flush(alias)


def _superuser(alias: str) -> bool:
    if alias not in _may_skip_triggers:
        with connections[alias].cursor() as cursor:
            cursor.execute("SELECT current_setting('is_superuser') = 'on'")
            _may_skip_triggers[alias] = cursor.fetchone()[0]
    return _may_skip_triggers[alias]


def tables_flush(alias: str) -> None:
    """Empty Django's tables of database `alias` as `manage.py flush` does, deleting only where rows are."""
    connection = connections[alias]
    quote = connection.ops.quote_name
    tables = connection.introspection.django_table_names(only_existing=True, include_views=False)
    with transaction.atomic(using=alias), connection.cursor() as cursor:
        cursor.execute(" UNION ALL ".join(f"(SELECT {i} FROM {quote(t)} LIMIT 1)" for i, t in enumerate(tables)))
        filled = {tables[i] for (i,) in cursor.fetchall()}
        made_kept = alias in _made_digest and _digest(cursor, quote) == _made_digest[alias]
        if made_kept:
            filled -= set(_MADE)
        cursor.execute("SET LOCAL session_replication_role = replica")
        for table in sorted(filled):
            cursor.execute(f"DELETE FROM {quote(table)}")
    if not made_kept:
        emit_post_migrate_signal(verbosity=0, interactive=False, db=alias)
        with connection.cursor() as cursor:
            _made_digest[alias] = _digest(cursor, quote)


def _digest(cursor: CursorWrapper, quote: Callable[[str], str]) -> str:
    """The content types and permissions, row for row (ids too), as one md5 each."""
    cursor.execute(
        "SELECT "
        + " || ".join(
            f"(SELECT COALESCE(md5(string_agg(t::text, ',' ORDER BY t.id)), '') FROM {quote(n)} t)" for n in _MADE
        )
    )
    return cursor.fetchone()[0]


def install() -> None:
    """From now on, every transactional test of this process ends with this flush."""
    TransactionTestCase._fixture_teardown = _fixture_teardown
