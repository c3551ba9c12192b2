"""A pytest plugin that keeps only the transactional tests, to time their setups and flushes.

Usage: python -m pytest -p bench.transactional_tests --durations=0 [PATHS]
(docs/development.md, "Transactional tests"). A test is transactional when its django_db mark has
transaction=True or it uses transactional_db, live_server or the reset-sequences or serialized-rollback
fixtures: those end with a flush of the database instead of a rollback.
"""

import pytest

_FIXTURES = {"transactional_db", "live_server", "django_db_reset_sequences", "django_db_serialized_rollback"}


def transactional(item: pytest.Item) -> bool:
    marker = item.get_closest_marker("django_db")
    if marker is not None and (marker.kwargs.get("transaction") or (marker.args and marker.args[0])):
        return True
    return bool(_FIXTURES & set(getattr(item, "fixturenames", ())))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    others = [item for item in items if not transactional(item)]
    if others:
        config.hook.pytest_deselected(items=others)
        items[:] = [item for item in items if transactional(item)]
