"""Reading a contacts CSV file: bounded in bytes and rows and its header checked before any row is matched or kept."""

import csv
import io

import tablib
from django.core.exceptions import ValidationError

# One request does the dry run and another the import, each within REQUEST_DEADLINE (10 s): 1,000 rows took
# 2.8-5.4 s on this 2-core host under a load of 5 (docs/benchmarks.md, "Back-office CSV"); bigger lists go
# in parts or through the API.
MAX_ROWS = 1000
MAX_BYTES = 1_000_000
COLUMNS = ("email", "name", "external_id", "tags")  # tags: comma-separated in one cell


def contacts_read(data: bytes) -> tablib.Dataset:
    """The file's rows as (email, name, external_id, tags), stripped, blank lines skipped; other columns are ignored.

    Raises ValidationError with a message for the person who uploaded it: too big, not UTF-8 text, a NUL
    character (PostgreSQL's text cannot hold one), no usable header, a row wider than the header, or more than
    MAX_ROWS rows; the reading stops at row MAX_ROWS + 1, so an 80,000-row file costs no more than that.
    """
    if len(data) > MAX_BYTES:
        raise ValidationError(f"At most {MAX_BYTES // 1_000_000} MB per file.")
    try:
        text = data.decode("utf-8-sig")  # Excel's "CSV UTF-8" starts with a byte order mark
    except UnicodeDecodeError:
        raise ValidationError("The file is not UTF-8 text: in a spreadsheet, save it as CSV UTF-8.") from None
    if "\x00" in text:
        line = text.count("\n", 0, text.index("\x00")) + 1
        raise ValidationError(f"The file holds a NUL character (line {line}): it is not a CSV text file.")
    lines = csv.reader(io.StringIO(text, newline=""))
    try:
        header = [cell.strip().lower() for cell in next(lines, [])]
        if not {"email", "external_id"} & set(header):
            raise ValidationError("The file needs a header row with email or external_id (and name, if you have it).")
        where = [header.index(column) if column in header else None for column in COLUMNS]
        rows = tablib.Dataset(headers=list(COLUMNS))
        for cells in lines:
            if not any(cell.strip() for cell in cells):
                continue
            if len(rows) == MAX_ROWS:
                raise ValidationError(f"At most {MAX_ROWS:,} rows per file; this one has more. Import it in parts.")
            if len(cells) > len(header):
                raise ValidationError(f"Row {len(rows) + 1} has more cells than the header row has columns.")
            rows.append([cells[i].strip() if i is not None and i < len(cells) else "" for i in where])
    except csv.Error as exc:  # an unclosed quote, a field past the csv module's 128 KiB
        raise ValidationError(f"The file cannot be read as CSV: {exc}.") from None
    return rows


def contacts_dataset(rows: list[tuple]) -> tablib.Dataset:
    """Rows that contacts_read returned (as kept for their confirmation), as its Dataset again."""
    return tablib.Dataset(*rows, headers=list(COLUMNS))
