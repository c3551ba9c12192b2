"""Allowed origins of the pixel's endpoint: parsed as a browser writes `Origin`, matched per line."""

import pytest

from lftrack.errors import Unprocessable
from tests.factories import WorkspaceFactory
from workspaces.origins import (
    origin_allowed_anywhere,
    origin_normalize,
    workspace_origin_allow,
    workspace_origin_allowed,
    workspace_origins,
)


@pytest.mark.parametrize(
    ("value", "origin"),
    [
        ("https://shop.example.com", "https://shop.example.com"),
        ("  https://Shop.Example.com/ ", "https://shop.example.com"),
        ("https://shop.example.com/landing?x=1", "https://shop.example.com"),
        ("https://shop.example.com:443", "https://shop.example.com"),
        ("http://shop.example.com:80", "http://shop.example.com"),
        ("http://localhost:8000", "http://localhost:8000"),
        ("http://[::1]:8000", "http://[::1]:8000"),
        ("shop.example.com", None),
        ("ftp://shop.example.com", None),
        ("null", None),
        ("https://", None),
        ("https://user:pw@shop.example.com", None),
        ("https://shop.example.com:99999", None),
        ("", None),
    ],
)
def test_origin_normalize(value, origin):
    assert origin_normalize(value) == origin


@pytest.mark.django_db
def test_one_origin_per_line_junk_lines_ignored():
    workspace = WorkspaceFactory(allowed_origins="https://a.example\r\n\nnot an origin\nhttp://localhost:3000/\n")
    assert workspace_origins(workspace) == {"https://a.example", "http://localhost:3000"}
    assert workspace_origin_allowed(workspace, "https://a.example")
    assert not workspace_origin_allowed(workspace, "https://a.example.evil.example")
    assert not workspace_origin_allowed(workspace, "null")


@pytest.mark.django_db
def test_preflight_lookup_matches_whole_lines_of_any_workspace():
    WorkspaceFactory(allowed_origins="https://shop.example.com:8443")
    assert origin_allowed_anywhere("https://shop.example.com:8443")
    assert not origin_allowed_anywhere("https://shop.example.com")
    assert not origin_allowed_anywhere("https://example.com")


@pytest.mark.django_db
def test_allow_is_idempotent_and_refuses_junk():
    workspace = WorkspaceFactory(allowed_origins="https://a.example")
    workspace_origin_allow(workspace=workspace, origin="https://B.example/")
    workspace_origin_allow(workspace=workspace, origin="https://b.example")
    workspace.refresh_from_db()
    assert workspace.allowed_origins == "https://a.example\nhttps://b.example"
    with pytest.raises(Unprocessable, match="invalid origin: nope"):
        workspace_origin_allow(workspace=workspace, origin="nope")
