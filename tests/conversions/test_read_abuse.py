"""The read API against tampered cursors, odd limits, dates and references: a 4xx `{"error"}` every time, never a
500, and never a row of another workspace."""

from base64 import urlsafe_b64encode

import pytest

from tests.conftest import assert_api_error
from tests.factories import CampaignFactory, ClickFactory, ConversionEventFactory, CustomerFactory, EnrollmentFactory
from workspaces.tokens import api_token_create

pytestmark = pytest.mark.django_db
PAGED = ["/api/v1/conversions", "/api/v1/customers", "/api/v1/campaigns/spring/enrollments"]


def forged(text: str) -> str:
    return urlsafe_b64encode(text.encode()).decode().rstrip("=")


@pytest.fixture
def rows(acme, globex):
    """Acme's rows and Globex's, Globex's made last (newest, highest ids)."""
    mine = CustomerFactory(workspace=acme, external_id="user.42")
    ConversionEventFactory(click=ClickFactory(link__post__workspace=acme), customer=mine, event="lead")
    EnrollmentFactory(campaign=CampaignFactory(workspace=acme, slug="spring"), customer=mine)
    theirs = CustomerFactory(workspace=globex, external_id="user.43")
    ConversionEventFactory(click=ClickFactory(link__post__workspace=globex), customer=theirs, event="lead")
    EnrollmentFactory(campaign=CampaignFactory(workspace=globex, slug="spring"), customer=theirs)
    return mine, theirs


@pytest.mark.parametrize("url", PAGED)
@pytest.mark.parametrize("limit", ["0", "101", "-1", "1e2", "²", "9" * 5000, "", " 5", "0x10", "٣"])
def test_a_limit_out_of_bounds_is_422(api, acme_token, rows, url, limit):
    assert_api_error(api.get(url, {"limit": limit}, token=acme_token), 422, "limit must be 1 to 100")


@pytest.mark.parametrize("url", [*PAGED, "/api/v1/customers/{mine}/activity"])
@pytest.mark.parametrize(
    "cursor",
    [
        "garbage!",
        "é",
        "=" * 9,
        forged("x|1"),
        forged("2026-01-01T00:00:00|1"),  # no offset
        forged("2026-01-01T00:00:00+00:00"),
        forged("2026-01-01T00:00:00+00:00|1|2|3"),
        forged("2026-01-01T00:00:00+00:00|-1"),
        forged("2026-01-01T00:00:00+00:00|²"),
        forged("2026-01-01T00:00:00+00:00|" + "9" * 5000),
        forged("2026-01-01T00:00:00+00:00|9223372036854775808"),
        forged("9999-12-31T23:59:59-15:59|1"),
        forged("0001-01-01T00:00:00+01:00|1"),
        "\udcff".encode("utf-8", "surrogatepass").hex(),
        "A" * 10000,
    ],
)
def test_a_tampered_cursor_is_422(api, acme_token, rows, url, cursor):
    url = url.format(mine=rows[0].pk)
    assert_api_error(api.get(url, {"cursor": cursor}, token=acme_token), 422, "invalid cursor")


@pytest.mark.parametrize("url", PAGED)
def test_a_forged_cursor_pages_this_workspace_only(api, acme_token, rows, url):
    """A well-formed cursor pointing past Globex's newest row still reads Acme's rows alone."""
    _mine, theirs = rows
    page = api.get(url, {"cursor": forged(f"2999-01-01T00:00:00+00:00|{2**62}")}, token=acme_token)
    assert page.status_code == 200
    body = page.json()
    assert len(body["data"]) == 1 and body["next"] is None
    assert theirs.email not in page.content.decode() and "user.43" not in page.content.decode()


@pytest.mark.parametrize(
    "params",
    [
        {"since": "2026-02-30T00:00:00Z"},
        {"since": "yesterday"},
        {"until": "2026-01-01"},
        {"until": "2026-01-01T00:00:00"},
        {"since": "0000-01-01T00:00:00Z"},
        {"since": "9999-12-31T23:59:59-15:00"},
        {"until": "²⁰²⁶-01-01T00:00:00Z"},
        {"since": "2026-01-01T25:00:00Z"},
        {"since": "2026-01-01T00:00:00+99:00"},
    ],
)
def test_bad_dates_are_422(api, acme_token, rows, params):
    ((name, _),) = params.items()
    assert_api_error(
        api.get("/api/v1/conversions", params, token=acme_token), 422, f"{name} must be an ISO 8601 time with an offset"
    )


@pytest.mark.parametrize(
    "reference",
    [
        "²",
        "9" * 5000,
        "9223372036854775808",
        "-1",
        "1.0",
        "ext_",
        "ext_user.43",
        "ext_%F0%9F%98%80",
        "ext_" + "x" * 5000,
        "ext_' OR 1=1 --",
        "ext_user.42%20",
        "ext_USER.42",
        "EXT_user.42",
        "%20ext_user.42",
        "{theirs}",
    ],
)
def test_odd_references_are_404(api, acme_token, rows, reference):
    reference = reference.format(theirs=rows[1].pk)
    assert_api_error(api.get(f"/api/v1/customers/{reference}", token=acme_token), 404, "unknown customer")
    assert_api_error(api.get(f"/api/v1/customers/{reference}/activity", token=acme_token), 404, "unknown customer")


def test_ext_lookup_with_dots_and_odd_characters_finds_the_one_customer(api, acme, acme_token, rows):
    odd = CustomerFactory(workspace=acme, external_id="a:b;c,d@e+f~g!h$i'j(k)l*m=n.ext_o")
    body = api.get(f"/api/v1/customers/ext_{odd.external_id}", token=acme_token).json()
    assert body["id"] == odd.pk and body["external_id"] == odd.external_id


@pytest.mark.parametrize("pk", ["²", "9" * 5000, "9223372036854775808", "-1"])
def test_odd_webhook_ids_are_404(api, acme_token, pk):
    assert_api_error(api.get(f"/api/v1/webhooks/{pk}", token=acme_token), 404, "unknown webhook")


def test_a_test_token_reads_no_live_numbers_from_analytics(api, acme, rows):
    """The analytics count live data only: a test token is refused, whatever it asks, and learns no number."""
    test_token = api_token_create(workspace=acme, name="trying", test=True).secret
    for params in ({}, {"group_by": "link"}, {"group_by": "campaign", "since": "2026-01-01"}, {"link_id": "1"}):
        assert_api_error(
            api.get("/api/v1/analytics", params, token=test_token), 403, "test tokens cannot read analytics"
        )
