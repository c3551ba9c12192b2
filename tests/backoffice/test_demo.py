"""`manage.py demo` gives a person an admin login (user `demo`, owner of the demo workspace) and a token,
the same on every run until `--reset`."""

import json
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client

from workspaces.models import ApiToken, Membership
from workspaces.tokens import api_token_authenticate

pytestmark = pytest.mark.django_db
LOGIN = "/admin/login/?next=/admin/"


def demo(*args) -> dict:
    out = StringIO()
    call_command("demo", *args, stdout=out)
    return json.loads(out.getvalue())


def logs_in(password: str) -> bool:
    return Client().post(LOGIN, {"username": "demo", "password": password}).status_code == 302


def test_demo_prints_the_same_owner_login_and_token_on_each_run():
    first, second = demo(), demo()
    assert first == second
    assert first["admin"]["username"] == "demo" and first["admin"]["url"].endswith("/admin/")
    assert logs_in(first["admin"]["password"])
    assert ApiToken.objects.filter(workspace__slug="demo", revoked_at__isnull=True).count() == 1
    assert api_token_authenticate(first["token"]).workspace.slug == "demo"
    membership = Membership.objects.get(user__username="demo", workspace__slug="demo")
    assert membership.role == "owner" and membership.user.is_staff
    client = Client()
    client.post(LOGIN, {"username": "demo", "password": first["admin"]["password"]})
    page = client.get("/admin/workspaces/apitoken/").content.decode()
    assert "Manage tokens" in page and membership.workspace.tracking_key in page


def test_reset_revokes_the_token_and_sets_a_new_password():
    first = demo()
    reset = demo("--reset")
    assert reset["token"] != first["token"] and reset["admin"]["password"] != first["admin"]["password"]
    assert api_token_authenticate(reset["token"]).workspace.slug == "demo"
    assert api_token_authenticate(first["token"]) is None
    assert not logs_in(first["admin"]["password"]) and logs_in(reset["admin"]["password"])
    assert demo() == reset


def test_a_password_changed_by_its_owner_is_kept_and_not_printed():
    demo()
    user = get_user_model().objects.get(username="demo")
    user.set_password("my own long passphrase")
    user.save()
    again = demo()
    assert again["admin"]["password"] is None and "--reset" in again["admin"]["note"]
    assert logs_in("my own long passphrase")


def test_a_token_revoked_in_the_back_office_is_replaced_by_a_working_one():
    first = demo()
    ApiToken.objects.filter(workspace__slug="demo").update(revoked_at="2026-01-01T00:00:00Z")
    second = demo()
    assert second["token"] != first["token"]
    assert api_token_authenticate(second["token"]).workspace.slug == "demo"


def test_the_password_outlives_a_token_revoked_in_the_back_office():
    first = demo()
    ApiToken.objects.filter(workspace__slug="demo").update(revoked_at="2026-01-01T00:00:00Z")
    assert demo()["admin"]["password"] == first["admin"]["password"]


def test_demo_refuses_the_key_everyone_knows(settings):
    settings.SECRET_KEY = settings.FALLBACK_SECRET_KEY
    with pytest.raises(Exception, match="demo needs a SECRET_KEY of its own"):
        demo()
