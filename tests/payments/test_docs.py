"""docs/payments.md is true: its commands print what it shows, and its Checkout Session snippet, run through the
stripe package against a recording HTTP client, sends the click id as client_reference_id."""

import os
import re
import subprocess
import sys
import urllib.parse
from pathlib import Path
from types import SimpleNamespace

import pytest
import stripe

from tests.conftest import database_url
from tests.factories import WorkspaceFactory
from tests.test_readme import console_steps, shows

DOC = (Path(__file__).resolve().parents[2] / "docs" / "payments.md").read_text()


@pytest.mark.django_db(transaction=True)
def test_the_commands_print_what_the_doc_shows():
    WorkspaceFactory(slug="demo")
    steps = console_steps(DOC)
    assert len(steps) >= 2
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "DEBUG": "1",
        "ENV_FILE": "",
        "LOG_FORMAT": "text",
        "PUBLIC_BASE_URL": "http://127.0.0.1:8000",
    }
    for command, expected in steps:
        result = subprocess.run(
            ["sh", "-c", command.replace(".venv/bin/python", sys.executable)],
            cwd=Path(__file__).resolve().parents[2],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 0, result.stderr
        assert shows(expected, result.stdout), f"$ {command}\nprinted:\n{result.stdout}\nthe doc shows:\n{expected}"


class Recording(stripe.HTTPClient):
    """What the snippet sends Stripe, answered with a session as Stripe's API would."""

    name = "recording"

    def __init__(self):
        super().__init__()
        self.sent = []

    def request(self, method, url, headers, post_data=None, *, _usage=None):
        self.sent.append((method, url, urllib.parse.parse_qs(post_data or "")))
        return (
            '{"id": "cs_test_1", "object": "checkout.session", "url": "https://checkout.stripe.com/c/pay/cs_test_1"}',
            200,
            {},
        )

    def close(self):
        pass


def test_the_checkout_session_snippet_passes_the_click_as_client_reference_id(monkeypatch):
    snippet = re.search(r"```python\n(.*?)```", DOC, re.S).group(1)
    assert len(snippet.strip().splitlines()) == 2  # the two lines the doc promises
    recording = Recording()
    monkeypatch.setattr(stripe, "default_http_client", recording)
    monkeypatch.setattr(stripe, "api_key", "sk_test_snippet")
    request = SimpleNamespace(COOKIES={"lf_cid": "Zm9vYmFyYmF6cXV4MTIzNA"})
    namespace = {
        "stripe": stripe,
        "request": request,
        "price_id": "price_1",
        "success_url": "https://shop.example.com/ok",
    }
    exec(snippet, namespace)
    method, url, params = recording.sent[0]
    assert (method, url) == ("post", "https://api.stripe.com/v1/checkout/sessions")
    assert params["client_reference_id"] == ["Zm9vYmFyYmF6cXV4MTIzNA"]
    assert params["mode"] == ["subscription"]
    assert namespace["session"].id == "cs_test_1"
