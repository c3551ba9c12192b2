"""Importing contacts from a CSV file, each row through the matching service (customer_match), as the API would.

django-import-export runs the screens: upload, a dry run inside a transaction that is rolled back (the
preview: which rows would create a contact, match one, or move an external id from another), the file
kept in the cache until it is confirmed, then the import in one transaction. Rows never become model
instances saved by the library: the resource hands each one to customer_match (channel "manual"), so
an import follows the same identity rules as every other way in (docs/matching.md).
"""
from django import forms
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.core.validators import EmailValidator
from django.http import HttpResponseRedirect
from django.urls import reverse
from import_export import fields, resources
from import_export.admin import ImportMixin
from import_export.formats.base_formats import CSV
from import_export.instance_loaders import BaseInstanceLoader
from import_export.forms import ConfirmImportForm, ImportForm
from import_export.results import RowResult
from import_export.tmp_storages import CacheStorage

from backoffice.scoping import visible_workspaces
from customers.models import Customer
from customers.services import customer_match
from lftrack.errors import ServiceError
from workspaces.models import Workspace

# One request does the dry run and another the import, each within REQUEST_DEADLINE (10 s): 1,000 rows took
# 2.8-5.4 s on this 2-core host under a load of 5 (docs/benchmarks.md, "Contact import"); bigger lists go
# in parts or through the API.
MAX_ROWS = 1000
MAX_BYTES = 1_000_000
LIMITS = {"email": 254, "name": 200, "external_id": 255}  # the columns' sizes, as the add form has them
_email = EmailValidator(message="Enter a valid email address.")


class ContactResource(resources.Resource):
    """email, name, external_id: a contact per row, matched in `workspace`."""

    email = fields.Field(column_name="email")
    name = fields.Field(column_name="name")
    external_id = fields.Field(column_name="external_id")

    class Meta:
        use_transactions = True
        skip_diff = True
        instance_loader_class = BaseInstanceLoader  # rows are matched by the service, never looked up here

    def __init__(self, workspace: Workspace | None = None, **kwargs):
        super().__init__(**kwargs)
        self.workspace = workspace

    @classmethod
    def get_display_name(cls) -> str:
        return "Contacts"

    def before_import(self, dataset, **kwargs) -> None:
        missing = {"email", "name", "external_id"} - set(dataset.headers or [])
        if missing == {"email", "name", "external_id"} or {"email", "external_id"} <= missing:
            raise ValidationError("The file needs a header row with email or external_id (and name, if you have it).")
        if len(dataset) > MAX_ROWS:
            raise ValidationError(f"At most {MAX_ROWS:,} rows per file; this one has {len(dataset):,}.")

    def import_row(self, row, instance_loader, **kwargs) -> RowResult:
        result = self.get_row_result_class()()
        values = {name: str(row.get(name) or "").strip() for name in LIMITS}
        result.row_values = values
        try:
            _check(values)
            match = customer_match(workspace=self.workspace, channel=Customer.Channel.MANUAL, **values)
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
            result.outcome, result.detail = "moved", f"external id {values['external_id']} moves here from {match.moved_from}"
        elif match.created:
            result.outcome, result.detail = "created", ""
        else:
            result.outcome, result.detail = "matched", f"already contact #{match.customer.pk}"
        result.contact = match.customer
        return result


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
    """The file, and the workspace its contacts join (hidden when the user has one)."""

    workspace = forms.ModelChoiceField(queryset=Workspace.objects.none(), empty_label=None)

    def __init__(self, formats, resources, *, workspaces, **kwargs):
        super().__init__(formats, resources, **kwargs)
        self.fields["workspace"].queryset = workspaces
        self.fields["import_file"].help_text = (
            f"A CSV file with a header row: email, name, external_id (email or external_id on each row); at most "
            f"{MAX_ROWS:,} rows. You see what it would do before anything is stored."
        )
        if len(workspaces) == 1:
            self.fields["workspace"].widget = forms.HiddenInput()
            self.fields["workspace"].initial = workspaces[0].pk

    def clean(self):
        data = super().clean()
        if "workspace" in self.errors and self.fields["workspace"].widget.is_hidden:
            self.add_error(None, "Choose one of your workspaces.")  # a hidden field's error would go unseen
        return data

    def clean_import_file(self):
        upload = self.cleaned_data["import_file"]
        if upload.size > MAX_BYTES:
            raise forms.ValidationError(f"At most {MAX_BYTES // 1_000_000} MB per file.")
        return upload


class ContactConfirmForm(ConfirmImportForm):
    """The confirm step names the workspace again: checked against the user's own, as on the first step."""

    workspace = forms.ModelChoiceField(queryset=Workspace.objects.none(), widget=forms.HiddenInput())

    def __init__(self, *args, workspaces, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["workspace"].queryset = workspaces


class UploadLost(Exception):
    """The uploaded file is no longer in the cache (expired after a day, or the cache is down)."""


class CachedUpload(CacheStorage):
    """The file waits for its confirmation in the cache (Redis in production), which every worker and node
    shares, rather than in a temporary directory of the one that answered the upload."""

    def save(self, data) -> None:
        try:
            super().save(data)
        except Exception as exc:  # redis.ConnectionError, timeouts
            raise UploadLost from exc

    def read(self):
        try:
            data = super().read()
        except Exception as exc:
            raise UploadLost from exc
        if data is None:
            raise UploadLost
        return data


class ContactImportMixin(ImportMixin):
    """"Import contacts" on the contacts list, for the roles that may add contacts."""

    resource_classes = [ContactResource]
    import_formats = [CSV]
    import_form_class = ContactImportForm
    confirm_form_class = ContactConfirmForm
    import_template_name = "admin/customers/customer/import.html"
    tmp_storage_class = CachedUpload

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
        workspace = form.cleaned_data.get("workspace") if form is not None and form.is_bound and form.is_valid() else None
        return {"workspace": workspace}

    def import_action(self, request, **kwargs):
        try:
            response = super().import_action(request, **kwargs)
        except UploadLost:
            return self._lost(request)
        result = getattr(response, "context_data", {}).get("result")
        if result is not None:  # the dry run's preview
            response.context_data["outcomes"] = outcomes(result)
        return response

    def process_import(self, request, **kwargs):
        try:
            return super().process_import(request, **kwargs)
        except UploadLost:  # nothing was imported
            return self._lost(request)

    def _lost(self, request) -> HttpResponseRedirect:
        self.message_user(request, "The uploaded file could not be kept (it expires after a day); please upload it "
                          "again.", messages.ERROR)
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

