"""CSV exports of a list page's rows, as filtered and searched on the page, streamed in constant memory.

django-import-export's export builds the whole file as a tablib Dataset before the first byte goes out
(its memory grows with the rows: docs/architecture.md, "Dependencies and why"); this streams instead. The rows are read
in keyset chunks by id, newest first, each chunk a query of its own: no server-side cursor held open for
the length of a download, and rows added meanwhile never show up half-way.
"""

import csv
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

from django.contrib.admin.options import IncorrectLookupParameters
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, StreamingHttpResponse
from django.urls import path, reverse
from django.utils import timezone

CHUNK = 2000
# A cell starting with one of these is a formula to a spreadsheet (OWASP "CSV injection"): names and event
# names come from the public pixel, so such a cell gets a leading apostrophe.
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


@dataclass(frozen=True)
class Column:
    heading: str
    value: Callable[[object], object]


def cell(value: object) -> object:
    """A value as a spreadsheet should read it: UTC times without an offset, never a formula."""
    if value is None:
        return ""
    if isinstance(value, datetime):
        return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(value, str) and value.startswith(_FORMULA_STARTS):
        return "'" + value
    return value


def rows_by_id(queryset: QuerySet) -> Iterator:
    """Every row of `queryset`, newest id first, CHUNK rows per query."""
    queryset = queryset.order_by("-pk")
    last = None
    while True:
        page = list((queryset if last is None else queryset.filter(pk__lt=last))[:CHUNK])
        yield from page
        if len(page) < CHUNK:
            return
        last = page[-1].pk


class _Line:
    """A file-like object whose write() hands back what csv.writer wrote."""

    def write(self, text: str) -> str:
        return text


def csv_lines(rows: Iterable, columns: list[Column]) -> Iterator[str]:
    writer = csv.writer(_Line())
    yield "\ufeff"  # a byte-order mark: Excel then reads the file as UTF-8
    yield writer.writerow([column.heading for column in columns])
    for row in rows:
        yield writer.writerow([cell(column.value(row)) for column in columns])


def csv_response(filename: str, rows: Iterable, columns: list[Column]) -> StreamingHttpResponse:
    response = StreamingHttpResponse((line.encode() for line in csv_lines(rows, columns)), content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    response["Cache-Control"] = "no-store"
    return response


class CsvExportMixin:
    """An "Export CSV" button on a list page: the rows the page shows under its filters and search, every page
    of them. `export_columns` names the columns; the list's own queryset (scoped, annotated) feeds them."""

    export_columns: list[Column] = []
    export_name = ""

    def _url_name(self, view: str) -> str:
        return f"{self.model._meta.app_label}_{self.model._meta.model_name}_{view}"

    def get_urls(self):
        export = path("export/", self.admin_site.admin_view(self.export_view), name=self._url_name("export"))
        return [export, *super().get_urls()]

    def export_view(self, request: HttpRequest) -> HttpResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        request.csv_export = True  # get_changelist: the filters without the page
        try:
            changelist = self.get_changelist_instance(request)  # the page's filters and search, from the query
        except IncorrectLookupParameters:  # as the list itself answers a filter it does not know
            return HttpResponseRedirect(reverse(f"admin:{self._url_name('changelist')}") + "?e=1")
        rows = changelist.queryset
        stamp = timezone.now().strftime("%Y%m%d-%H%M")
        return csv_response(
            f"{self.export_name or self.model._meta.model_name}-{stamp}.csv", rows_by_id(rows), self.export_columns
        )

    def get_changelist(self, request, **kwargs):
        changelist = super().get_changelist(request, **kwargs)
        return _without_page(changelist) if getattr(request, "csv_export", False) else changelist

    def changelist_view(self, request, extra_context=None):
        url = reverse(f"admin:{self._url_name('export')}", current_app=self.admin_site.name)
        return super().changelist_view(request, {"export_url": url, **(extra_context or {})})


def _without_page(changelist: type) -> type:
    """`changelist` that finds the list's rows (filters, search, order) but not a page of them: the export reads its
    rows in chunks itself, so the page's count, its rows and what a list adds to them (the page's revenue) are not
    read at all."""

    class Filtered(changelist):
        def get_results(self, request):
            self.result_list, self.result_count, self.full_result_count = [], 0, 0

    return Filtered
