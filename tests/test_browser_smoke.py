"""The browser fixture reaches the live server (a guard for the browser tests of the pixel and admin)."""

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_tracked_link_lands_with_lf_cid(browser, live_server):
    from tests.factories import LinkFactory

    link = LinkFactory(destination=live_server.url + "/healthz?from=post#top")
    browser.get(f"{live_server.url}/l/{link.key}")
    assert browser.current_url.startswith(live_server.url + "/healthz?from=post&lf_cid=")
    assert browser.current_url.endswith("#top")
    assert '"ok"' in browser.page_source
