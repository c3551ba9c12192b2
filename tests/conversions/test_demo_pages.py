"""The demo landing page of `make run`: DEBUG only, carries the pixel with the demo workspace's key."""

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import override_settings

from clicks.models import Link
from tests.factories import ClickFactory, ConversionEventFactory, CustomerFactory, WorkspaceFactory
from workspaces.origins import workspace_origins

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(("method", "path"), [("get", "/demo/landing"), ("post", "/demo/thanks")])
def test_demo_pages_do_not_exist_without_debug(client, method, path):
    WorkspaceFactory(slug="demo")
    assert getattr(client, method)(path).status_code == 404


@override_settings(DEBUG=True, PUBLIC_BASE_URL="https://track.example.com")
def test_landing_loads_the_pixel_with_the_demo_key(client):
    demo = WorkspaceFactory(slug="demo")
    html = client.get("/demo/landing").content.decode()
    assert f'<script src="https://track.example.com/lf.js" data-key="{demo.tracking_key}" defer></script>' in html
    assert 'id="signup-form"' in html
    assert 'id="newsletter-form" method="post" action="/demo/thanks" data-lf-ignore>' in html


@override_settings(DEBUG=True)
def test_landing_without_a_demo_workspace_says_how_to_make_one(client):
    html = client.get("/demo/landing").content.decode()
    assert "<script src=" not in html
    assert "python manage.py demo" in html


@override_settings(DEBUG=True)
def test_thanks_page_shows_the_pixel_leads_of_this_click_only(client):
    demo = WorkspaceFactory(slug="demo")
    click = ClickFactory(link__post__workspace=demo)
    mine = ConversionEventFactory(
        click=click, channel="pixel", customer=CustomerFactory(workspace=demo, email="ada@example.com")
    )
    ConversionEventFactory(click=click, channel="api")  # the server's lead: not the pixel's
    ConversionEventFactory(click=ClickFactory(link=click.link), channel="pixel")  # another visitor
    client.cookies["lf_cid"] = click.click_id
    resp = client.post("/demo/thanks", {"form": "signup", "email": "ada@example.com", "name": "Ada"})
    assert resp.status_code == 302 and resp["Location"] == "/demo/thanks"  # POST, redirect, GET: reloads are safe
    html = client.get("/demo/thanks").content.decode()
    assert "Thank you, Ada!" in html
    assert html.count("<td>#") == 1
    assert f"<td>#{mine.pk}</td>" in html and "ada@example.com" in html
    assert "http-equiv" not in html


@override_settings(DEBUG=True)
def test_thanks_page_looks_again_a_few_times_for_a_late_lead(client):
    demo = WorkspaceFactory(slug="demo")
    client.cookies["lf_cid"] = ClickFactory(link__post__workspace=demo).click_id
    client.post("/demo/thanks", {"form": "signup", "email": "ada@example.com"})
    assert '<meta http-equiv="refresh" content="1; url=?try=1">' in client.get("/demo/thanks").content.decode()
    assert 'url=?try=5"' in client.get("/demo/thanks?try=4").content.decode()
    last = client.get("/demo/thanks?try=5").content.decode()
    assert "http-equiv" not in last
    assert "allowed origins" in last
    assert "http-equiv" not in client.get("/demo/thanks?try=99999999").content.decode()


@override_settings(DEBUG=True)
def test_thanks_page_of_the_ignored_form_does_not_wait(client):
    demo = WorkspaceFactory(slug="demo")
    client.cookies["lf_cid"] = ClickFactory(link__post__workspace=demo).click_id
    client.post("/demo/thanks", {"form": "newsletter", "email": "news@example.com"})
    html = client.get("/demo/thanks?try=5").content.decode()
    assert "You are subscribed" in html and "as expected" in html


def test_demo_command_links_to_the_landing_page_and_allows_its_origin(settings):
    settings.PUBLIC_BASE_URL = "http://127.0.0.1:8000"
    out = StringIO()
    call_command("demo", stdout=out)
    printed = json.loads(out.getvalue())
    link = Link.objects.get(pk=printed["link"]["id"])
    assert link.destination == "http://127.0.0.1:8000/demo/landing?utm_source=lftrack-demo#signup"
    assert workspace_origins(link.workspace) == {"http://127.0.0.1:8000"}
    call_command("demo", stdout=StringIO())  # rerunnable: the origin is not added twice
    link.workspace.refresh_from_db()
    assert link.workspace.allowed_origins == "http://127.0.0.1:8000"
