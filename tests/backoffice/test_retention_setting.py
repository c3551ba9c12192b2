"""Settings › Privacy: an owner sets how long the workspace keeps clicks and conversions (docs/privacy.md,
"Retention"); out-of-range values are refused on the form, and editors cannot change it."""

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db


def settings_of(client, workspace, **data):
    page = reverse("admin:workspaces_workspace_change", args=[workspace.pk])
    return client.post(page, {"name": workspace.name, "allowed_origins": "", "currency": "USD", **data})


def test_owners_set_the_window_and_empty_keeps_forever(as_alice, acme):
    page = as_alice.get(reverse("admin:workspaces_workspace_change", args=[acme.pk])).content.decode()
    assert "Keep clicks and conversions (days)" in page
    assert settings_of(as_alice, acme, retention_days="30").status_code == 302
    acme.refresh_from_db()
    assert acme.retention_days == 30
    assert settings_of(as_alice, acme, retention_days="").status_code == 302
    acme.refresh_from_db()
    assert acme.retention_days is None


@pytest.mark.parametrize("days", ["0", "36501", "-1", "ten"])
def test_out_of_range_windows_are_refused_and_change_nothing(as_alice, acme, days):
    response = settings_of(as_alice, acme, retention_days=days)
    assert response.status_code == 200 and "errorlist" in response.content.decode()
    acme.refresh_from_db()
    assert acme.retention_days is None


def test_editors_cannot_change_it(as_bob, acme):
    response = settings_of(as_bob, acme, retention_days="1")
    assert response.status_code in (302, 403)
    acme.refresh_from_db()
    assert acme.retention_days is None
