"""Cost of one country lookup per library, the candidates for clicks/geo.py: iptocc and geoip2fast.

Usage: python bench/country_lookup.py LIBRARY N      # LIBRARY: iptocc, geoip2fast or none (the loop alone)

Loads the library's table, then looks N addresses up (public IPv4 of many registries, two IPv6, two
documentation addresses). Time per call with timeit; instructions per call, which the host's speed does not
move, as the difference of two runs under callgrind divided by the difference of their N (docs/benchmarks.md,
"Country of a click"):

    valgrind --tool=callgrind .venv/bin/python bench/country_lookup.py iptocc 1000    # and 11000
    .venv/bin/python -m timeit -s "from iptocc import country_code as f" "f('81.2.69.142')"

geoip2fast is not a dependency: `pip install geoip2fast` to measure it again.
"""

import sys
from collections.abc import Callable


def lookup(library: str) -> Callable[[str], object]:
    if library == "iptocc":
        from iptocc import country_code

        return country_code
    if library == "geoip2fast":
        from geoip2fast import GeoIP2Fast

        table = GeoIP2Fast(verbose=False)
        return lambda address: table.lookup(address).country_code
    return lambda address: None


def main() -> None:
    library, n = sys.argv[1], int(sys.argv[2])
    addresses = [
        f"{a}.{b}.{c}.{d}"
        for a, b, c, d in zip(range(1, 224, 7), range(3, 250, 11), range(5, 250, 13), range(7, 250, 3), strict=False)
    ]
    addresses += ["2a00:1450:4001::1", "2001:4860:4860::8888", "198.51.100.7", "203.0.113.7"]
    country = lookup(library)
    for i in range(n):
        country(addresses[i % len(addresses)])


if __name__ == "__main__":
    main()
