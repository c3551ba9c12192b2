"""A click's country (and, with an operator's city database, its city) from the visitor's address, and its UTM
fields from its link, stored as the redirect records it."""

import pytest
from django.test import override_settings
from mmdb_writer import MMDBWriter
from netaddr import IPSet

from clicks import geo
from clicks.links import link_add, link_update
from clicks.models import Click

pytestmark = pytest.mark.django_db

# Public addresses whose country the registries' delegations say (81.2.69.0/24 is also MaxMind's test London).
LONDON = "81.2.69.142"
GOOGLE_DNS = "8.8.8.8"


@pytest.fixture
def link(acme):
    return link_add(
        workspace=acme,
        destination="https://shop.example.com/pricing?ref=a",
        utm={"utm_source": "newsletter", "utm_medium": "email", "utm_campaign": "autumn"},
    )


@pytest.fixture
def city_database(tmp_path):
    """A GeoLite2 City database of one network (London), as MaxMind's would answer it, at GEOIP_PATH for the test."""
    writer = MMDBWriter(ip_version=6, ipv4_compatible=True, database_type="GeoLite2-City", languages=["en"])
    writer.insert_network(
        IPSet(["81.2.69.0/24"]),
        {"city": {"names": {"en": "London"}}, "country": {"iso_code": "GB", "names": {"en": "United Kingdom"}}},
    )
    path = tmp_path / "GeoLite2-City.mmdb"
    writer.to_db_file(str(path))
    geo._city_reader.cache_clear()
    with override_settings(GEOIP_PATH=str(tmp_path)):  # the folder: the file is found by its usual name
        yield path
    geo._city_reader.cache_clear()


def test_the_redirect_stores_the_country_of_the_visitors_address(client, link):
    assert client.get(f"/l/{link.key}", REMOTE_ADDR=LONDON).status_code == 302
    assert client.get(f"/l/{link.key}", REMOTE_ADDR=GOOGLE_DNS).status_code == 302
    assert list(Click.objects.order_by("id").values_list("country", "city")) == [("GB", ""), ("US", "")]


@override_settings(TRUSTED_PROXY_COUNT=1)
def test_behind_a_proxy_the_country_is_the_forwarded_clients_not_a_forged_one(client, link):
    client.get(f"/l/{link.key}", REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR=f"{GOOGLE_DNS}, {LONDON}")
    assert Click.objects.get().country == "GB"  # the proxy appended LONDON; the client wrote GOOGLE_DNS itself


@pytest.mark.parametrize("address", ["127.0.0.1", "10.1.2.3", "192.0.2.7", "::1", "not-an-address"])
def test_a_private_reserved_or_junk_address_has_no_country(client, link, address):
    assert client.get(f"/l/{link.key}", REMOTE_ADDR=address).status_code == 302
    assert Click.objects.get().country == ""


def test_an_ipv6_visitor_has_its_country(client, link):
    client.get(f"/l/{link.key}", REMOTE_ADDR="2a00:1450:4001:82b::200e")  # counted by its /64, as the click limit
    assert Click.objects.get().country == "IE"


def test_the_click_carries_its_links_utm_fields_and_keeps_them_through_a_change(client, link, alice):
    client.get(f"/l/{link.key}")
    link_update(link=link, user=alice, changes={"utm_source": "print", "utm_campaign": ""})
    client.get(f"/l/{link.key}")
    assert list(Click.objects.order_by("id").values_list("utm_source", "utm_medium", "utm_campaign")) == [
        ("newsletter", "email", "autumn"),
        ("print", "email", ""),
    ]


def test_with_a_city_database_the_city_is_stored_too(client, link, city_database):
    client.get(f"/l/{link.key}", REMOTE_ADDR=LONDON)
    client.get(f"/l/{link.key}", REMOTE_ADDR=GOOGLE_DNS)  # not in this database
    client.get(f"/l/{link.key}", REMOTE_ADDR="not-an-address")  # never looked up through DNS
    assert list(Click.objects.order_by("id").values_list("country", "city")) == [("GB", "London"), ("US", ""), ("", "")]


def test_a_database_that_is_not_a_city_one_fails_the_start(tmp_path):
    writer = MMDBWriter(ip_version=6, ipv4_compatible=True, database_type="GeoLite2-Country", languages=["en"])
    writer.insert_network(IPSet(["81.2.69.0/24"]), {"country": {"iso_code": "GB"}})
    writer.to_db_file(str(tmp_path / "country.mmdb"))
    geo._city_reader.cache_clear()
    try:
        with override_settings(GEOIP_PATH=str(tmp_path / "country.mmdb")), pytest.raises(Exception, match="city"):
            geo.city_reader_load()
    finally:
        geo._city_reader.cache_clear()
