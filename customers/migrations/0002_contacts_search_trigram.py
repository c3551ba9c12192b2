"""Trigram indexes for the admin's contact search.

The admin searches with `icontains`, which PostgreSQL runs as `UPPER(col::text) LIKE UPPER('%term%')`:
no b-tree helps, so on a million contacts every search was a full scan (1.1 s measured: docs/benchmarks.md,
"Contact search"). A GIN trigram index on exactly that expression serves it. Built CONCURRENTLY so
a live contacts table keeps taking writes.
"""

from django.db import migrations

FIELDS = ["email", "name", "external_id"]


def create(apps, schema_editor):
    schema_editor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    for field in FIELDS:
        schema_editor.execute(
            f"CREATE INDEX CONCURRENTLY IF NOT EXISTS customers_search_{field}"
            f" ON customers_customer USING gin (UPPER({field}::text) gin_trgm_ops)"
        )


def drop(apps, schema_editor):
    for field in FIELDS:
        schema_editor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS customers_search_{field}")


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run inside a transaction

    dependencies = [("customers", "0001_initial")]

    operations = [migrations.RunPython(create, drop)]
