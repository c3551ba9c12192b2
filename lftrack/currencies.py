"""ISO 4217 currencies and their minor units, from ISO's own table (the `iso4217` package ships it)."""

import iso4217

# Code -> digits after the decimal point of its minor unit (JPY 0, USD 2, KWD 3). Codes without a minor unit
# (gold, SDRs, the testing code) take no amounts.
MINOR_UNITS: dict[str, int] = {
    currency.code: currency.exponent for currency in iso4217.Currency if currency.exponent is not None
}
DEFAULT_CURRENCY = "USD"
# The most any one amount may be, in its currency's minor unit, in the API and in the database (CHECK
# constraints): 2**53 - 1, the largest integer that a JSON consumer holding numbers as doubles (JavaScript)
# reads exactly, and room for any real sale in any currency (docs/api.md, "Money bounds").
MONEY_MAX = 2**53 - 1


def currency_code(raw: str) -> str | None:
    """The ISO 4217 code `raw` names, in any letter case, or None."""
    code = raw.upper() if isinstance(raw, str) and raw.isascii() else ""
    return code if code in MINOR_UNITS else None


def amount_text(minor: int, currency: str) -> str:
    """An amount in a currency's minor unit as people write it: (49000, "USD") -> "490.00 USD", (500, "JPY") ->
    "500 JPY", (1500, "KWD") -> "1.500 KWD"."""
    digits = MINOR_UNITS.get(currency, 2)
    sign = "-" if minor < 0 else ""
    units, fraction = divmod(abs(int(minor)), 10**digits)
    return f"{sign}{units:,}{f'.{fraction:0{digits}d}' if digits else ''} {currency}"
