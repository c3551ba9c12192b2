"""How the back office writes values: every moment in one format, in UTC."""

from django.utils.formats import date_format
from django.utils.timezone import localtime


def when(value) -> str:
    """A moment as the back office writes every one (lftrack/formats/): 2026-03-02 09:00, in UTC."""
    return date_format(localtime(value), "DATETIME_FORMAT") if value else "-"
