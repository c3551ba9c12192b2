"""GET /lf.js: the pixel's script, small, long-cacheable, revalidated by ETag, gzipped on request."""

import gzip

import pytest

from conversions.views import SCRIPT_PATH

URL = "/lf.js"


def test_script_is_served_with_a_long_cache_and_an_etag(client):
    resp = client.get(URL)
    assert resp.status_code == 200
    assert resp["Content-Type"] == "text/javascript; charset=utf-8"
    assert resp.content == SCRIPT_PATH.read_bytes()
    assert resp["Cache-Control"] == "public, max-age=86400, stale-while-revalidate=604800"
    assert resp["Cross-Origin-Resource-Policy"] == "cross-origin"
    assert resp["ETag"].startswith('"') and resp["ETag"].endswith('"')
    assert "Content-Encoding" not in resp
    assert "Accept-Encoding" in resp["Vary"]
    assert "Set-Cookie" not in resp


@pytest.mark.parametrize("if_none_match", ["{etag}", "W/{etag}", '"other", {etag}'])
def test_unchanged_script_is_304(client, if_none_match):
    etag = client.get(URL)["ETag"]
    resp = client.get(URL, HTTP_IF_NONE_MATCH=if_none_match.format(etag=etag))
    assert resp.status_code == 304
    assert resp.content == b""
    assert resp["ETag"] == etag


def test_changed_script_is_sent_again(client):
    assert client.get(URL, HTTP_IF_NONE_MATCH='"an-old-version"').status_code == 200


@pytest.mark.parametrize("accept", ["gzip, deflate, br", "br;q=1.0, gzip;q=0.8", "*"])
def test_gzip_for_browsers_that_take_it(client, accept):
    resp = client.get(URL, HTTP_ACCEPT_ENCODING=accept)
    assert resp["Content-Encoding"] == "gzip"
    assert gzip.decompress(resp.content) == SCRIPT_PATH.read_bytes()


@pytest.mark.parametrize("accept", ["", "br", "gzip;q=0", "identity", "gzip;q=junk"])
def test_no_gzip_otherwise(client, accept):
    resp = client.get(URL, HTTP_ACCEPT_ENCODING=accept)
    assert "Content-Encoding" not in resp
    assert resp.content == SCRIPT_PATH.read_bytes()


def test_script_stays_small():
    raw = SCRIPT_PATH.read_bytes()
    # Comments included; minified it is well under 3 KB (docs/pixel.md, "What the script does"). 4.5 KB since it
    # tags Stripe links.
    assert len(raw) < 4.5 * 1024
    assert len(gzip.compress(raw, 9)) < 2 * 1024


def test_only_get_and_head(client):
    assert client.head(URL).status_code == 200
    assert client.post(URL).status_code == 405
