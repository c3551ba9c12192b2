"""Every migration is safe for the code still running during a rolling deploy: django-migration-linter reads the
SQL each one runs on PostgreSQL and refuses a dropped or renamed column or table, NOT NULL without a database
default, a type change, a unique constraint or an index built without CONCURRENTLY on an existing table, and a
data migration without a reverse (docs/deployment.md, "Migrations safe for the running code"). The migrations
that shipped before the rule are listed, each with what it does that the rule now refuses."""

import functools
import re

import pytest
from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import connection, migrations, models
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.migration import Migration
from django.db.migrations.state import ProjectState
from django_migration_linter import MigrationLinter
from django_migration_linter.sql_analyser import PostgresqlAnalyser, analyse_sql_statements

# The project's apps: the others' migrations (Django's, procrastinate's) are their authors' to keep safe.
APPS = ("workspaces", "clicks", "customers", "conversions", "campaigns", "rollups", "webhooks", "payments")

# Shipped before this rule: (app, migration) -> the codes it raises, and what it did that older code could trip
# on or wait behind. A new migration joins only for a unique index built CONCURRENTLY or a varchar widened (a
# catalog change only) that no older code can break, saying why; anything else goes over two releases or builds
# concurrently (docs/deployment.md, "Migrations safe for the running code").
PLAIN_INDEX = "an index built or dropped without CONCURRENTLY: writes to the table wait for the build"
HISTORICAL: dict[tuple[str, str], tuple[set[str], str]] = {
    ("campaigns", "0002_cross_app_relations"): (
        {"NOT_NULL", "CREATE_INDEX", "ADD_UNIQUE"},
        "the first release's relations, on tables no earlier code had used",
    ),
    ("campaigns", "0003_recipients_index_in_list_order"): ({"CREATE_INDEX", "DROP_INDEX"}, PLAIN_INDEX),
    ("campaigns", "0008_enrollment_pending"): (
        {"NOT_NULL"},
        "held_name NOT NULL with a default Django drops: older code's enrollments failed until it was replaced "
        "(db_default='' today)",
    ),
    ("campaigns", "0010_test_mode"): (
        {"ADD_UNIQUE"},
        "a unique index built CONCURRENTLY, looser than the one it replaced (the mode added to its columns)",
    ),
    ("campaigns", "0011_fair_share_indexes"): ({"CREATE_INDEX", "DROP_INDEX"}, PLAIN_INDEX),
    ("clicks", "0002_drop_redundant_indexes"): (
        {"ADD_UNIQUE", "DROP_INDEX"},
        "click_id's uniqueness renamed, built without CONCURRENTLY on clicks",
    ),
    ("clicks", "0008_managed_links"): (
        {"ALTER_COLUMN"},
        "a link's key widened from varchar(8) to varchar(64): PostgreSQL changes the catalog only (no rewrite, no "
        "index rebuild), and older code writes 8-character keys",
    ),
    ("clicks", "0004_remove_post_campaign"): (
        {"DROP_COLUMN"},
        "post.campaign dropped in the release that stopped reading it: older code's post queries failed until "
        "it was replaced (stop reading in one release, drop in the next, today)",
    ),
    ("conversions", "0009_idempotency_key_per_mode"): (
        {"ADD_UNIQUE"},
        "a unique index built CONCURRENTLY, looser than the one it replaced (the mode added to its columns)",
    ),
    ("rollups", "0004_daily_totals"): (
        {"DROP_TABLE"},
        "the old link totals dropped in the release that replaced them: older code's numbers failed until it "
        "was replaced",
    ),
    ("webhooks", "0002_undispatched_per_workspace"): ({"CREATE_INDEX", "DROP_INDEX"}, PLAIN_INDEX),
}

# The linter's own index check reads a partial index's WHERE as part of the table's name, so an index of a table
# created in the same migration looks like one on an existing table; this one reads the name right.
INDEX = re.compile(r'^CREATE (?:UNIQUE )?INDEX (?!CONCURRENTLY)(?:IF NOT EXISTS )?"?\w+"? ON "?(\w+)"?')


def plain_indexes(statements: list[str]) -> bool:
    """Whether a statement builds an index without CONCURRENTLY on a table this migration did not create."""
    created = set()
    for sql in statements:
        if table := re.match(r'^CREATE TABLE "?(\w+)"?', sql):
            created.add(table[1])
        elif (index := INDEX.match(sql)) and index[1] not in created:
            return True
    return False


def migration_problems(migration: Migration, state: ProjectState) -> set[str]:
    """The codes of what a migration does that older code still running could trip on or wait behind, from the
    SQL it runs on PostgreSQL (django-migration-linter's rules, its index check replaced) and its data steps."""
    with connection.schema_editor(collect_sql=True, atomic=migration.atomic) as editor:
        migration.apply(state, editor, collect_sql=True)
    statements = [sql for sql in editor.collected_sql if not sql.startswith("--")]
    errors, _, warnings = analyse_sql_statements(
        PostgresqlAnalyser, statements, exclude_migration_tests=["CREATE_INDEX", "CREATE_INDEX_EXCLUSIVE"]
    )
    data_errors, _, data_warnings = MigrationLinter(no_cache=True, no_output=True).analyse_data_migration(migration)
    found = {issue.code for issue in errors + warnings + data_errors + data_warnings}
    return found | ({"CREATE_INDEX"} if plain_indexes(statements) else set())


@functools.cache
def loader() -> MigrationLoader:
    """The migrations on disk (none is applied or read from the database)."""
    return MigrationLoader(None, ignore_no_migrations=True)


def project_problems() -> dict[tuple[str, str], set[str]]:
    found = {}
    for key, migration in sorted(loader().disk_migrations.items()):
        if key[0] in APPS and (codes := migration_problems(migration, loader().project_state(key, at_end=False))):
            found[key] = codes
    return found


def planted(app: str, *operations, atomic: bool = True) -> set[str]:
    """The codes of a migration made of `operations`, planted after the app's latest one."""
    (latest,) = loader().graph.leaf_nodes(app)
    migration = type("Migration", (migrations.Migration,), {"operations": list(operations), "atomic": atomic})(
        "9999_planted", app
    )
    return migration_problems(migration, loader().project_state(latest, at_end=True))


# The migrations are read, not run; AddIndexConcurrently refuses to be read inside a transaction too.
@pytest.mark.django_db(transaction=True)
def test_every_migration_is_safe_for_the_code_still_running_or_listed_as_shipped_before_the_rule():
    found = project_problems()
    unsafe = {f"{app}.{name}": sorted(codes) for (app, name), codes in found.items() if (app, name) not in HISTORICAL}
    assert unsafe == {}, 'unsafe during a rolling deploy (docs/deployment.md, "Migrations safe for the running code")'
    # The list stays true: each listed migration exists and raises exactly what it is listed for.
    assert {key: codes for key, (codes, _) in HISTORICAL.items()} == {key: found.get(key) for key in HISTORICAL}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("app", "operation", "code"),
    [
        ("clicks", migrations.RemoveField("link", "destination"), "DROP_COLUMN"),
        ("clicks", migrations.RenameField("link", "destination", "target"), "RENAME_COLUMN"),
        ("clicks", migrations.RenameModel("Post", "Article"), "RENAME_TABLE"),
        ("payments", migrations.DeleteModel("Delivery"), "DROP_TABLE"),
        # NOT NULL on a column older code leaves empty, and a new NOT NULL column whose default only Django knows.
        ("campaigns", migrations.AlterField("enrollment", "confirm_by", models.DateTimeField()), "NOT_NULL"),
        ("clicks", migrations.AddField("link", "note", models.CharField(max_length=20, default="")), "NOT_NULL"),
        ("clicks", migrations.AlterField("link", "destination", models.TextField()), "ALTER_COLUMN"),
        (
            "clicks",
            migrations.AddIndex("click", models.Index(fields=["created_at"], name="clicks_click_t")),
            "CREATE_INDEX",
        ),
        (
            "clicks",
            migrations.AddConstraint("link", models.UniqueConstraint(fields=["destination"], name="clicks_link_u")),
            "ADD_UNIQUE",
        ),
        ("clicks", migrations.RemoveIndex("click", "clicks_click_link_tail"), "DROP_INDEX"),
        ("clicks", migrations.RunPython(lambda apps, schema_editor: None), "RUNPYTHON_REVERSIBLE"),
    ],
    ids=lambda value: value if isinstance(value, str) else type(value).__name__,
)
def test_a_planted_unsafe_migration_fails(app, operation, code):
    assert code in planted(app, operation)


@pytest.mark.django_db(transaction=True)
def test_the_safe_ways_pass():
    assert (
        planted(
            "clicks",
            migrations.AddField("link", "note", models.CharField(max_length=20, null=True)),
            migrations.AddField("link", "label", models.CharField(max_length=20, default="", db_default="")),
            AddIndexConcurrently("click", models.Index(fields=["created_at"], name="clicks_click_t")),
            migrations.CreateModel(
                "Tag",
                [("id", models.BigAutoField(primary_key=True)), ("name", models.CharField(max_length=20))],
                options={"indexes": [models.Index(fields=["name"], condition=models.Q(name__gt=""), name="t_n")]},
            ),
            migrations.RunPython(lambda apps, schema_editor: None, migrations.RunPython.noop),
            atomic=False,
        )
        == set()
    )
