"""Schema operations the migrations share."""

from django.db import migrations


def index_swap(table: str, *, build: tuple[str, str], drop: tuple[str, str]) -> migrations.RunPython:
    """Replace the index `drop` with `build`, each `(name, columns)`, on a table that takes writes all the time.

    CONCURRENTLY: inserts go on while it builds; the migration needs `atomic = False`. Reversible: going back builds `drop` again and drops `build`.
    """

    def swap(new: tuple[str, str], old: tuple[str, str]):
        def run(apps, schema_editor):
            schema_editor.execute(f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {new[0]} ON {table} ({new[1]})")
            schema_editor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {old[0]}")

        return run

    return migrations.RunPython(swap(build, drop), swap(drop, build))
