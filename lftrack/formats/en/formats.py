"""2026-03-01 12:30: sortable, unambiguous in every country, in UTC (TIME_ZONE); the admin's frame says so once."""

DATETIME_FORMAT = SHORT_DATETIME_FORMAT = "Y-m-d H:i"
DATE_FORMAT = SHORT_DATE_FORMAT = "Y-m-d"
TIME_FORMAT = "H:i"
MONTH_DAY_FORMAT = "M j"
