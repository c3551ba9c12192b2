"""An Idempotency-Key names one request per workspace and mode: a test token's key never replays a live answer,
nor takes the key of a live sale that will come. The column comes with a constant default (no table rewrite);
the new unique index is built CONCURRENTLY and then becomes the constraint, so conversions carrying keys keep
being taken, and a key stays unique at every moment."""

from django.db import migrations, models

TABLE = "conversions_idempotencykey"
OLD, NEW = "conversions_idempotencykey_one_per_key", "conversions_idempotencykey_one_per_key_and_mode"


def swap(build: str, drop: str, columns: str) -> list[str]:
    return [
        f"CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS {build} ON {TABLE} ({columns})",
        f"ALTER TABLE {TABLE} ADD CONSTRAINT {build} UNIQUE USING INDEX {build}",
        f"ALTER TABLE {TABLE} DROP CONSTRAINT {drop}",
    ]


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run inside a transaction

    dependencies = [("conversions", "0008_money_bounded")]

    operations = [
        migrations.AddField(
            model_name="idempotencykey",
            name="is_test",
            field=models.BooleanField(db_default=False, default=False),
        ),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveConstraint(model_name="idempotencykey", name=OLD),
                migrations.AddConstraint(
                    model_name="idempotencykey",
                    constraint=models.UniqueConstraint(fields=("workspace", "key", "is_test"), name=NEW),
                ),
            ],
            database_operations=[
                migrations.RunSQL(swap(NEW, OLD, "workspace_id, key, is_test"), swap(OLD, NEW, "workspace_id, key")),
            ],
        ),
    ]
