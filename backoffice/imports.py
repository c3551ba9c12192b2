"""Importing contacts from a CSV file, each row through the matching service (customer_match), as the API would.

django-import-export draws the screens: the upload, a preview of what each row would do (create a contact,
match one, or move an external id from another), then the import. The file is read within its bounds before
anything else happens (backoffice/contact_csv.py); the preview is a dry run whose transactions are rolled back,
and only a preview without errors keeps the rows for their confirmation (backoffice/uploads.py). Rows never
become model instances saved by the library: the resource hands each one to customer_match (channel "manual"),
so an import follows the same identity rules as every other way in (docs/matching.md). Both runs go in batches
of short transactions, so a maximal file never holds a live contact's row for long (docs/concurrency.md,
"Contact import").
"""

from collections import defaultdict

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.validators import EmailValidator
from django.db import transaction
from django.http import HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.decorators import method_decorator
from django.views.decorators.http import require_POST
from import_export import fields, resources
from import_export.admin import ImportMixin
from import_export.formats.base_formats import CSV
from import_export.forms import ConfirmImportForm, ImportForm
from import_export.results import Result, RowResult

from backoffice import contact_csv
from backoffice.scoping import visible_workspaces
from backoffice.uploads import UploadLost, upload_drop, upload_keep, upload_take
from customers.models import Customer
from customers.services import customer_match
from customers.tags import contact_tags_add, tags_parse
from lftrack.errors import ServiceError
from workspaces.models import Workspace

LIMITS = {"email": 254, "name": 200, "external_id": 255}  # the columns' sizes, as the add form has them
# Rows per transaction: a batch holds its contacts' rows well within the 3 s a conversion waits for one
# (DB_LOCK_TIMEOUT); the whole file in one transaction held them for seconds, and conversions answered 503
# (docs/benchmarks.md, "The import beside live conversions").
BATCH_ROWS = 50
_email = EmailValidator(message="Enter a valid email address.")


class ContactResource(resources.Resource):
    """email, name, external_id, tags: a contact per row, matched in `workspace`, given the row's tags (added to any
    they have: an import never removes a tag)."""

    email = fields.Field(column_name="email")
    name = fields.Field(column_name="name")
    external_id = fields.Field(column_name="external_id")
    tags = fields.Field(column_name="tags")

    def __init__(self, workspace: Workspace | None = None, **kwargs):
        super().__init__(**kwargs)
        self.workspace = workspace

    @classmethod
    def get_display_name(cls) -> str:
        return "Contacts"

    def import_data(self, dataset, dry_run: bool = False, **kwargs) -> Result:
        """Each batch of rows in a transaction of its own, rolled back in a dry run; the rows' results in file order.

        The library would run the whole file in one transaction, holding the row of every contact it matched
        until its last row: a maximal file then made conversions for those contacts wait past their lock timeout.
        """
        rows = [dict(zip(dataset.headers, values, strict=True)) for values in dataset]
        outcomes: dict[int, RowResult] = {}
        for batch in _batches(rows):
            with transaction.atomic():
                for number in batch:
                    outcomes[number] = self.import_row(rows[number], None)
                transaction.set_rollback(dry_run)
        result = self.get_result_class()()
        result.total_rows = len(rows)
        for number, row_result in sorted(outcomes.items()):
            result.increment_row_result_total(row_result)
            if row_result.validation_error is not None:
                result.append_invalid_row(number + 1, rows[number], row_result.validation_error)
            result.append_row_result(row_result)
        return result

    def import_row(self, row, instance_loader, **kwargs) -> RowResult:
        result = self.get_row_result_class()()
        result.row_values = values = {name: row[name] for name in LIMITS}
        try:
            _check(values)
            tags = _tags(row.get("tags", ""))
            match = customer_match(workspace=self.workspace, channel=Customer.Channel.MANUAL, **values)
            if tags:
                contact_tags_add(customer=match.customer, names=tags)
        except ValidationError as exc:
            result.import_type, result.validation_error = RowResult.IMPORT_TYPE_INVALID, exc
            return result
        except ServiceError as exc:  # "customer needs email or external_id"
            result.import_type = RowResult.IMPORT_TYPE_INVALID
            result.validation_error = ValidationError(exc.message)
            return result
        result.import_type = RowResult.IMPORT_TYPE_NEW if match.created else RowResult.IMPORT_TYPE_UPDATE
        result.object_id, result.object_repr = match.customer.pk, str(match.customer)
        if match.moved_from is not None:
            result.outcome, result.detail = (
                "moved",
                f"external id {values['external_id']} moves here from {match.moved_from}",
            )
        elif match.created:
            result.outcome, result.detail = "created", ""
        else:
            result.outcome, result.detail = "matched", f"already contact #{match.customer.pk}"
        result.contact = match.customer
        return result


def _batches(rows: list[dict[str, str]]) -> list[list[int]]:
    """Row indexes in batches of at most BATCH_ROWS, in file order within each.

    Rows that name the same email (in any case) or external id, directly or through one another, share a batch,
    so the preview of each sees what the rows before it would have done (a repeated contact is "matched", not
    "created" twice). A chain of more than BATCH_ROWS such rows goes on in the next batch, where its preview
    shows the rows as the database has them, not as the earlier part of the file would leave them.
    """
    first_of: dict[tuple[str, str], int] = {}
    parent = list(range(len(rows)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, row in enumerate(rows):
        for key in (("email", row["email"].lower()), ("external_id", row["external_id"])):
            if key[1]:
                a, b = root(i), root(first_of.setdefault(key, i))
                parent[max(a, b)] = min(a, b)
    groups: dict[int, list[int]] = defaultdict(list)
    for i in range(len(rows)):
        groups[root(i)].append(i)
    batches: list[list[int]] = [[]]
    for members in groups.values():
        for start in range(0, len(members), BATCH_ROWS):
            part = members[start : start + BATCH_ROWS]
            if len(batches[-1]) + len(part) > BATCH_ROWS:
                batches.append([])
            batches[-1].extend(part)
    return [sorted(batch) for batch in batches if batch]


def _tags(cell: str) -> list[str]:
    """The row's tags, comma-separated in one cell, checked as the API checks them."""
    try:
        return tags_parse(cell)
    except ServiceError as exc:
        raise ValidationError({"tags": exc.message}) from None


def _check(values: dict) -> None:
    errors = {name: f"At most {limit} characters." for name, limit in LIMITS.items() if len(values[name]) > limit}
    if values["email"] and "email" not in errors:
        try:
            _email(values["email"])
        except ValidationError as exc:
            errors["email"] = exc.messages
    if errors:
        raise ValidationError(errors)


class ContactImportForm(ImportForm):
    """The file, and the workspace its contacts join (hidden when the user has one).

    The file is read here, within its bounds (`contacts`, backoffice/contact_csv.py): a file refused now is
    never matched, locked against or kept.
    """

    workspace = forms.ModelChoiceField(queryset=Workspace.objects.none(), empty_label=None)

    def __init__(self, formats, resources, *, workspaces, **kwargs):
        super().__init__(formats, resources, **kwargs)
        self.fields["workspace"].queryset = workspaces
        self.fields["import_file"].help_text = (
            f"A CSV file with a header row: email, name, external_id (email or external_id on each row); at most "
            f"{contact_csv.MAX_ROWS:,} rows. You see what it would do before anything is stored."
        )
        if len(workspaces) == 1:
            self.fields["workspace"].widget = forms.HiddenInput()
            self.fields["workspace"].initial = workspaces[0].pk
        self.contacts = None

    def clean(self):
        data = super().clean()
        if "workspace" in self.errors and self.fields["workspace"].widget.is_hidden:
            self.add_error(None, "Choose one of your workspaces.")  # a hidden field's error would go unseen
        return data

    def clean_import_file(self):
        upload = self.cleaned_data["import_file"]
        if upload.size > contact_csv.MAX_BYTES:  # before reading it
            raise forms.ValidationError(f"At most {contact_csv.MAX_BYTES // 1_000_000} MB per file.")
        self.contacts = contact_csv.contacts_read(upload.read())
        return upload


class ContactConfirmForm(ConfirmImportForm):
    """The confirm step names the workspace again: checked against the user's own, as on the first step."""

    workspace = forms.ModelChoiceField(queryset=Workspace.objects.none(), widget=forms.HiddenInput())

    def __init__(self, *args, workspaces, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["workspace"].queryset = workspaces


class ContactImportMixin(ImportMixin):
    """ "Import contacts" on the contacts list, for the roles that may add contacts.

    The library's screens and forms, with our own two steps: the upload is read (the form), previewed, and kept
    only when the preview has no error; the confirmation imports what was kept, and forgets it.
    """

    resource_classes = [ContactResource]
    import_formats = [CSV]
    import_form_class = ContactImportForm
    confirm_form_class = ContactConfirmForm
    import_template_name = "admin/customers/customer/import.html"

    def has_import_permission(self, request) -> bool:
        return self.has_add_permission(request)

    def _workspaces(self, request):
        return visible_workspaces(request, self.add_roles)

    def get_import_form_kwargs(self, request):
        return {**super().get_import_form_kwargs(request), "workspaces": self._workspaces(request)}

    def get_confirm_form_kwargs(self, request, import_form=None):
        return {**super().get_confirm_form_kwargs(request, import_form), "workspaces": self._workspaces(request)}

    def get_confirm_form_initial(self, request, import_form):
        initial = super().get_confirm_form_initial(request, import_form)
        if import_form is not None:
            initial["workspace"] = import_form.cleaned_data["workspace"].pk
        return initial

    def get_import_resource_kwargs(self, request, **kwargs):
        form = kwargs.get("form")
        workspace = (
            form.cleaned_data.get("workspace") if form is not None and form.is_bound and form.is_valid() else None
        )
        return {"workspace": workspace}

    def import_action(self, request, **kwargs):
        """The upload form (GET, the library's); a posted file read, previewed and, without an error, kept."""
        if request.method != "POST":
            return super().import_action(request, **kwargs)
        if not self.has_import_permission(request):
            raise PermissionDenied
        form = self.create_import_form(request)
        context = {}
        if form.is_valid():
            result = ContactResource(workspace=form.cleaned_data["workspace"]).import_data(form.contacts, dry_run=True)
            context = {"result": result, "outcomes": outcomes(result)}
            if not result.has_validation_errors():
                try:
                    name = upload_keep(user_id=request.user.pk, rows=list(form.contacts))
                except UploadLost:
                    return self._lost(request)
                form.cleaned_data["import_file"].tmp_storage_name = name
                context["confirm_form"] = self.create_confirm_form(request, import_form=form)
        return self._page(request, form, context)

    def _page(self, request, form, context: dict) -> TemplateResponse:
        """The import page as the library draws it."""
        request.current_app = self.admin_site.name
        return TemplateResponse(
            request,
            [self.import_template_name],
            {
                **self.admin_site.each_context(request),
                **self.get_import_context_data(),
                "title": "Import",
                "form": form,
                "opts": self.model._meta,
                "media": self.media + form.media,
                "fields_list": [(ContactResource.get_display_name(), list(contact_csv.COLUMNS))],
                "import_error_display": self.import_error_display,
                **context,
            },
        )

    @method_decorator(require_POST)
    def process_import(self, request, **kwargs):
        """Import the rows kept for this user under the confirmed name, then forget them; or forget them only,
        when the user chose another file or the confirmation does not hold."""
        if not self.has_import_permission(request):
            raise PermissionDenied
        form = self.create_confirm_form(request)
        name = request.POST.get("import_file_name", "")
        if "cancel" in request.POST:
            upload_drop(user_id=request.user.pk, name=name)
            self.message_user(request, "Nothing was imported.", messages.INFO)
            return HttpResponseRedirect(reverse("admin:customers_customer_import"))
        if not form.is_valid():
            upload_drop(user_id=request.user.pk, name=name)
            return super().process_import(request, **kwargs)  # the page with the form's errors
        try:
            rows = upload_take(user_id=request.user.pk, name=form.cleaned_data["import_file_name"])
        except UploadLost:  # nothing was imported
            return self._lost(request)
        try:
            result = self.process_dataset(contact_csv.contacts_dataset(rows), form, request, **kwargs)
        finally:
            upload_drop(user_id=request.user.pk, name=name)
        return self.process_result(result, request)

    def _lost(self, request) -> HttpResponseRedirect:
        self.message_user(
            request,
            "The uploaded file is no longer kept (an hour at most, and only your last three); please upload it again.",
            messages.ERROR,
        )
        return HttpResponseRedirect(reverse("admin:customers_customer_import"))

    def generate_log_entries(self, result, request):
        return None  # customer_match wrote each contact's own activity; the admin log would repeat it

    def add_success_message(self, result, request) -> None:
        counts = outcomes(result)
        self.message_user(
            request,
            f"Imported {sum(counts.values())} row(s): {counts['created']} new contact(s), {counts['matched']} matched, "
            f"{counts['moved']} external id(s) moved.",
            messages.SUCCESS,
        )


def outcomes(result) -> dict[str, int]:
    """How many rows created, matched or moved (an external id from another contact to this one)."""
    counts = {"created": 0, "matched": 0, "moved": 0}
    for row in result.valid_rows():
        counts[row.outcome] += 1
    return counts
