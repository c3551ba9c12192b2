"""tests/flush.py leaves the database as Django's flush does: every table empty, the content types and permissions
as post_migrate makes them, no row logged by a trigger on the way."""

import pytest
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.core.management import call_command
from django.db import connection

from rollups.models import CampaignNumberDelta
from tests import flush
from tests.factories import ClickFactory, EnrollmentFactory, RefundFactory

pytestmark = pytest.mark.django_db(transaction=True)


def rows() -> dict[str, int]:
    """The row count of every table of Django's that has rows."""
    tables = connection.introspection.django_table_names(only_existing=True, include_views=False)
    with connection.cursor() as cursor:
        cursor.execute(
            " UNION ALL ".join(
                f"SELECT {i}, COUNT(*) FROM {connection.ops.quote_name(t)}" for i, t in enumerate(tables)
            )
        )
        return {tables[i]: n for i, n in cursor.fetchall() if n}


def made() -> tuple[set, set]:
    """What post_migrate makes, by name (Django's flush gives the rows new ids)."""
    return (
        set(ContentType.objects.values_list("app_label", "model")),
        set(Permission.objects.values_list("content_type__app_label", "content_type__model", "codename", "name")),
    )


def test_it_leaves_what_djangos_flush_leaves(acme, alice, acme_token):
    EnrollmentFactory(campaign__workspace=acme)  # the roll-up triggers log a CampaignNumberDelta
    RefundFactory(conversion__click=ClickFactory(link__post__workspace=acme))
    assert CampaignNumberDelta.objects.exists()
    flush.tables_flush("default")
    ours = rows(), made()
    call_command("flush", interactive=False, verbosity=0)  # Django's: TRUNCATE of every table, then post_migrate
    assert (rows(), made()) == ours
    assert set(ours[0]) == {"django_content_type", "auth_permission"}


def test_it_keeps_the_content_types_only_as_post_migrate_made_them(acme):
    flush.tables_flush("default")  # post_migrate's rows are known from here on
    kept = list(ContentType.objects.order_by("pk").values_list("pk", "app_label", "model"))
    flush.tables_flush("default")
    assert list(ContentType.objects.order_by("pk").values_list("pk", "app_label", "model")) == kept

    everything = made()
    ContentType.objects.filter(app_label="payments").delete()  # and their permissions with them
    Permission.objects.filter(codename="view_workspace").update(name="changed")
    flush.tables_flush("default")
    assert made() == everything
