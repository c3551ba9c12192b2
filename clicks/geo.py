"""Place of a click's address: its country from iptocc's built-in table, its city from an operator's GeoLite2 City."""

import functools
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from iptocc import country_code

# iptocc's table is compiled into its extension module: importing it is the whole load (under a millisecond, once
# per process), and a lookup is about 460 instructions above a no-op call, no I/O
# (docs/benchmarks.md, "Country of a click").


def country_of(address: str) -> str:
    """The ISO 3166 alpha-2 code of `address`'s country, or '' (a private, reserved or unknown address, junk)."""
    return (country_code(address) or "") if address else ""


@functools.cache
def _city_reader() -> Any:
    """The GEOIP_PATH database, opened once per process and memory-mapped (a lookup reads no file); None without
    GEOIP_PATH. Django's GeoIP2 opens it first and says whether it is a city database; lookups then read the
    record itself: GeoIP2.city() builds a dict of 16 fields (30 µs) and resolves anything not an address
    through DNS, which a redirect must never wait on."""
    if not settings.GEOIP_PATH:
        return None
    import maxminddb  # the `city` extra: geoip2 and maxminddb (docs/configuration.md)
    from django.contrib.gis.geoip2 import GeoIP2

    path = Path(settings.GEOIP_PATH)
    path = path / getattr(settings, "GEOIP_CITY", "GeoLite2-City.mmdb") if path.is_dir() else path
    if not GeoIP2(path).is_city:
        raise ImproperlyConfigured(f"GEOIP_PATH: {path} is not a city database (GeoLite2 City or GeoIP2 City)")
    # Read through once, so the lookups' page faults find the file in the page cache: a gevent worker must not
    # wait on the disk in the middle of a redirect.
    with path.open("rb") as file:
        while file.read(1 << 20):
            pass
    return maxminddb.open_database(str(path))


def city_reader_load() -> None:
    """Opens the city database at start (clicks/apps.py), so that no visitor waits for it and a bad path fails
    the start, not a click."""
    _city_reader()


def city_of(address: str) -> str:
    """The English name of `address`'s city in the operator's database, '' without one or when it does not say."""
    reader = _city_reader()
    if reader is None:
        return ""
    try:
        found = reader.get(address)
    except ValueError:  # not an address: recorded without a city
        return ""
    names = (found or {}).get("city", {}).get("names", {})
    return str(names.get("en", ""))[:200]
