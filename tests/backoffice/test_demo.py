"""`manage.py demo` gives a person an admin login: user `demo`, owner of the demo workspace, new password each run."""
import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client

from workspaces.models import Membership

pytestmark = pytest.mark.django_db


def demo() -> dict:
    out = StringIO()
    call_command("demo", stdout=out)
    return json.loads(out.getvalue())


def test_demo_prints_an_owner_login_that_changes_on_each_run():
    first, second = demo()["admin"], demo()["admin"]
    assert first["username"] == second["username"] == "demo"
    assert first["url"].endswith("/admin/")
    assert first["password"] != second["password"]
    client = Client()
    login = "/admin/login/?next=/admin/"
    assert client.post(login, {"username": "demo", "password": first["password"]}).status_code == 200  # refused
    assert client.post(login, {"username": "demo", "password": second["password"]}).status_code == 302
    membership = Membership.objects.get(user__username="demo", workspace__slug="demo")
    assert membership.role == "owner" and membership.user.is_staff
    page = client.get("/admin/workspaces/apitoken/").content.decode()
    assert "Manage tokens" in page and membership.workspace.tracking_key in page
