"""Contacts: search, filters, everything known about a person, and adding one by hand (channel "manual")."""

import contextlib

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Exists, F, FilteredRelation, OuterRef, Q, QuerySet
from django.db.models.functions import Coalesce, Lower
from django.http import HttpResponseRedirect, JsonResponse
from django.urls import path, reverse
from django.utils.html import format_html
from django.utils.safestring import mark_safe

from backoffice.base import ServiceFormAdmin
from backoffice.clicks import PageRevenue, revenue_text
from backoffice.contact_page import contact_sections, suppression_row
from backoffice.display import when
from backoffice.exports import Column, CsvExportMixin
from backoffice.filters import ModeFilter, titled
from backoffice.forms import WorkspaceChoiceForm
from backoffice.imports import ContactImportMixin
from backoffice.scoping import MEMBERS, OWNERS, scope
from campaigns.models import Campaign, Suppression
from campaigns.services import campaign_lead_add, suppression_add
from conversions.selectors import customer_totals
from customers.erasure import customer_erase, customer_export
from customers.models import ContactTag, Customer
from customers.services import customer_match
from customers.tags import MAX_TAG_LENGTH, MAX_TAGS, contact_tags, contact_tags_set, tags_parse
from lftrack.db import as_id
from lftrack.errors import ServiceError


def suppression_of(outer: str = "") -> Exists:
    """True when the workspace's suppression list (of the contact's mode) holds this contact's lower(email)."""
    return Exists(
        Suppression.objects.filter(
            workspace=OuterRef(f"{outer}workspace"),
            email=Lower(OuterRef(f"{outer}email")),
            is_test=OuterRef(f"{outer}is_test"),
        )
    )


def with_totals(contacts: QuerySet) -> QuerySet:
    """Each contact's lifetime leads, sales and net revenue in their workspace's currency, from the stored totals
    (conversions.CustomerTotals): a join of one row each, unique per contact and currency, so the list sorts by
    them without summing anyone's events (docs/backoffice.md, "The pages")."""
    return contacts.annotate(
        counts_row=FilteredRelation("totals", condition=Q(totals__currency="")),
        main_row=FilteredRelation("totals", condition=Q(totals__currency=F("workspace__currency"))),
    ).annotate(
        leads_total=Coalesce(F("counts_row__leads"), 0),
        sales_total=Coalesce(F("counts_row__sales"), 0),
        net_main=Coalesce(F("main_row__net_cents"), 0),
        main_currency=F("workspace__currency"),
    )


class SuppressedFilter(admin.SimpleListFilter):
    title = "suppression"
    parameter_name = "suppressed"

    def lookups(self, request, model_admin):
        return [("yes", "Suppressed"), ("no", "Not suppressed")]

    def queryset(self, request, queryset):
        if self.value() == "yes":
            return queryset.filter(suppressed=True)
        if self.value() == "no":
            return queryset.filter(suppressed=False)
        return queryset


class TagFilter(admin.SimpleListFilter):
    """Contacts with one tag: the tags of the workspaces the user sees, the most used first (a bounded list)."""

    title = "tag"
    parameter_name = "tag"

    def lookups(self, request, model_admin):
        tags = (
            model_admin.scoped(ContactTag.objects.all(), request)
            .values("name")
            .annotate(uses=Count("pk"))
            .order_by("-uses", "name")[:50]
        )
        return [(row["name"], row["name"]) for row in tags]

    def queryset(self, request, queryset):
        if self.value():
            return queryset.filter(Exists(ContactTag.objects.filter(customer=OuterRef("pk"), name=self.value())))
        return queryset


class TagsForm(forms.Form):
    tags = forms.CharField(
        required=False,
        max_length=MAX_TAGS * (MAX_TAG_LENGTH + 2),
        widget=forms.TextInput(attrs={"size": 60}),
        help_text=f"Comma-separated, at most {MAX_TAGS}; stored lower-cased. Segments select contacts by tag.",
    )

    def clean_tags(self) -> list[str]:
        try:
            return tags_parse(self.cleaned_data["tags"])
        except ServiceError as exc:
            raise forms.ValidationError(exc.message) from None


class ContactAddForm(WorkspaceChoiceForm):
    email = forms.EmailField(max_length=254, required=False)
    name = forms.CharField(max_length=200, required=False)
    external_id = forms.CharField(
        max_length=255, required=False, label="External id", help_text="Your own system's id for this person, if any."
    )


class EnrollForm(forms.Form):
    """Which campaign the selected contacts join (single opt-in: the owner vouches for them)."""

    ids = forms.CharField(widget=forms.HiddenInput)
    campaign = forms.ModelChoiceField(queryset=Campaign.objects.none(), empty_label=None)

    def __init__(self, *args, campaigns, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["campaign"].queryset = campaigns


@admin.register(Customer)
class CustomerAdmin(PageRevenue, ContactImportMixin, CsvExportMixin, ServiceFormAdmin):
    """Contacts. Identity fields change only through the matching service, so the page is read-only."""

    view_roles = add_roles = MEMBERS
    add_form = ContactAddForm
    add_title = add_submit = "Add contact"
    add_intro = "An email already known in the workspace reuses that contact; an external id moves to it."
    list_display = [
        "contact",
        "name",
        "external_id",
        "source",
        "leads",
        "sales",
        "net_revenue",
        "is_suppressed",
        "created_at",
    ]
    list_filter = [ModeFilter, ("source", titled("how they came in")), SuppressedFilter, TagFilter, "workspace"]
    search_fields = ["email", "name", "external_id"]
    ordering = ["-created_at", "-pk"]
    fieldsets = [
        ("Identity", {"fields": ["email", "name", "external_id", "avatar", "tag_list"]}),
        ("How they came in", {"fields": ["source", "mode", "created_at", "updated_at", "suppression"]}),
    ]
    readonly_fields = [
        "email",
        "name",
        "external_id",
        "avatar",
        "source",
        "mode",
        "created_at",
        "updated_at",
        "suppression",
        "tag_list",
    ]
    suppress_roles = OWNERS
    # Tags are a marketer's labels, not identity: every member may set them.
    tag_roles = MEMBERS
    # Erasing or exporting a person (GDPR articles 17, 15): owners only (docs/privacy.md).
    erase_roles = OWNERS
    actions = ["enroll_contacts", "suppress_contacts"]
    export_name = "contacts"
    export_columns = [
        Column("id", lambda c: c.pk),
        Column("email", lambda c: c.email),
        Column("name", lambda c: c.name),
        Column("external_id", lambda c: c.external_id),
        Column("came in by", lambda c: c.get_source_display()),
        Column("created (UTC)", lambda c: c.created_at),
        Column("suppressed", lambda c: "yes" if c.suppressed else ""),
    ]

    @admin.display(description="mode")
    def mode(self, obj: Customer) -> str:
        return "Test data: made by a test token, counted nowhere, never mailed" if obj.is_test else "Live"

    @admin.action(description="Enroll selected contacts in a campaign…", permissions=["suppress"])
    def enroll_contacts(self, request, queryset) -> HttpResponseRedirect:
        """On to a page that asks which campaign, the choice kept in its address."""
        ids = self.action_queryset(request, queryset, self.suppress_roles).values_list("pk", flat=True)
        return HttpResponseRedirect(reverse("admin:customers_customer_enroll") + "?ids=" + ",".join(map(str, ids)))

    def enroll_view(self, request):
        """Enroll the chosen contacts as POST /api/v1/campaigns/<slug>/leads does, channel `manual`: one
        outcome each (created contacts are not made here, so reused, already enrolled or suppressed)."""
        if not self.has_suppress_permission(request):
            raise PermissionDenied
        raw_ids = (request.POST if request.method == "POST" else request.GET).get("ids", "")
        ids = [i for i in map(as_id, raw_ids.split(",")) if i is not None][:1000]
        contacts = self.scoped(Customer.objects.filter(pk__in=ids), request, self.suppress_roles).exclude(email="")
        campaigns = scope(Campaign.objects.order_by("name", "pk"), request, self.suppress_roles)
        form = EnrollForm(request.POST or None, initial={"ids": raw_ids}, campaigns=campaigns)
        if request.method == "POST" and form.is_valid():
            campaign = form.cleaned_data["campaign"]
            outcomes: dict[str, int] = {}
            for contact in contacts.filter(workspace_id=campaign.workspace_id).order_by("pk"):
                result = campaign_lead_add(
                    campaign=campaign, email=contact.email, channel=Customer.Channel.MANUAL, test=contact.is_test
                )
                outcomes[result.outcome] = outcomes.get(result.outcome, 0) + 1
            told = ", ".join(f"{count} {outcome.replace('_', ' ')}" for outcome, count in sorted(outcomes.items()))
            self.message_user(request, f"Enrolled in {campaign}: {told or 'nobody'}.", messages.SUCCESS)
            return HttpResponseRedirect(reverse("admin:customers_customer_changelist"))
        return self.render_screen(
            request,
            "admin/backoffice/form.html",
            {
                "form": form,
                "submit_label": "Enroll",
                "intro": f"{contacts.count()} contact(s) with an email, of the "
                "selected ones in the campaign's workspace, join its sequence now; suppressed addresses are skipped.",
            },
            title="Enroll in a campaign",
        )

    def get_urls(self):
        enroll = path("enroll/", self.admin_site.admin_view(self.enroll_view), name="customers_customer_enroll")
        erase = path(
            "<path:object_id>/erase/", self.admin_site.admin_view(self.erase_view), name="customers_customer_erase"
        )
        export = path(
            "<path:object_id>/person-export/",
            self.admin_site.admin_view(self.person_export_view),
            name="customers_customer_person_export",
        )
        tags = path(
            "<path:object_id>/tags/", self.admin_site.admin_view(self.tags_view), name="customers_customer_tags"
        )
        return [enroll, erase, export, tags, *super().get_urls()]

    def tags_view(self, request, object_id):
        """The contact's tags as one comma-separated field, set through contact_tags_set."""
        contact = self.get_object(request, unquote(object_id))
        if contact is None:
            return self._get_obj_does_not_exist_redirect(request, self.opts, object_id)
        if not self.allowed(request, self.tag_roles, contact):
            raise PermissionDenied
        form = TagsForm(request.POST or None, initial={"tags": ", ".join(contact_tags(contact))})
        if request.method == "POST" and form.is_valid():
            try:
                tags = contact_tags_set(customer=contact, names=form.cleaned_data["tags"])
            except ServiceError as exc:
                form.add_error("tags", exc.message)
            else:
                self.message_user(request, f"Tags of {contact}: {', '.join(tags) or 'none'}.", messages.SUCCESS)
                return HttpResponseRedirect(reverse("admin:customers_customer_change", args=[contact.pk]))
        return self.render_screen(
            request,
            "admin/backoffice/form.html",
            {"form": form, "submit_label": "Save tags", "intro": f"Tags of {contact}."},
            title="Tags",
        )

    @admin.display(description="tags")
    def tag_list(self, obj: Customer) -> str:
        tags = contact_tags(obj)
        edit = reverse("admin:customers_customer_tags", args=[obj.pk])
        return format_html('{} <a href="{}">Edit tags</a>', ", ".join(tags) or "none", edit)

    def erase_view(self, request, object_id):
        """Owners: a confirmation, then `customer_erase` (docs/privacy.md, "Erasing a person"); editors get 403."""
        contact = self.get_object(request, unquote(object_id))
        if contact is None:
            return self._get_obj_does_not_exist_redirect(request, self.opts, object_id)
        if not self.allowed(request, self.erase_roles, contact):
            raise PermissionDenied
        if request.method == "POST" and request.POST.get("confirm") == "yes":
            # Erased meanwhile (another owner, the API): the same outcome.
            with contextlib.suppress(ServiceError):
                customer_erase(customer=contact)
            self.message_user(request, f"Erased contact #{contact.pk}.", messages.SUCCESS)
            return HttpResponseRedirect(reverse("admin:customers_customer_changelist"))
        return self.render_screen(
            request, "admin/customers/customer/erase.html", {"contact": contact}, title="Erase this person"
        )

    def person_export_view(self, request, object_id):
        """Owners: everything known of the person, as the API's export, downloaded as a JSON file. Not named
        export_view: that is the contact list's CSV export (backoffice/exports.py)."""
        contact = self.get_object(request, unquote(object_id))
        if contact is None:
            return self._get_obj_does_not_exist_redirect(request, self.opts, object_id)
        if not self.allowed(request, self.erase_roles, contact):
            raise PermissionDenied
        response = JsonResponse(customer_export(customer=contact), json_dumps_params={"indent": 2})
        response["Content-Disposition"] = f'attachment; filename="contact-{contact.pk}.json"'
        return response

    def has_suppress_permission(self, request, obj=None) -> bool:
        return self.allowed(request, self.suppress_roles, obj)

    @admin.action(description="Suppress selected contacts (unsubscribed)", permissions=["suppress"])
    def suppress_contacts(self, request, queryset) -> None:
        """Put their addresses on the workspace's do-not-email list; their active enrollments stop."""
        chosen = self.action_queryset(request, queryset, self.suppress_roles).exclude(email="")
        suppressed = 0
        for contact in chosen.select_related("workspace").order_by("pk"):
            try:
                suppression_add(
                    workspace=contact.workspace,
                    email=contact.email,
                    test=contact.is_test,
                    reason=Suppression.Reason.UNSUBSCRIBED,
                    channel=Customer.Channel.MANUAL,
                )
                suppressed += 1
            except ServiceError:
                continue  # an address the suppression list refuses (stored before stricter checks)
        self.message_user(request, f"Suppressed {suppressed} contact(s).", messages.SUCCESS)

    def get_queryset(self, request):
        # An erased contact's emptied row is nobody (customers/erasure.py).
        contacts = super().get_queryset(request).filter(erased_at__isnull=True).annotate(suppressed=suppression_of())
        return with_totals(contacts)

    def revenue_of(self, ids: list[int]) -> dict[int, list[dict]]:
        return {pk: totals["revenue"] for pk, totals in customer_totals(customer_ids=ids).items()}

    @admin.display(description="leads", ordering="leads_total")
    def leads(self, obj: Customer) -> int:
        return obj.leads_total

    @admin.display(description="sales", ordering="sales_total")
    def sales(self, obj: Customer) -> int:
        return obj.sales_total

    # Sorted by the net revenue in the workspace's currency: amounts in two currencies never add up or compare
    # (no exchange rate is applied); the other currencies show below it.
    @admin.display(description="net revenue", ordering="net_main")
    def net_revenue(self, obj: Customer) -> str:
        main = getattr(obj, "main_currency", "")
        shown = self.shown_revenue(obj)
        return revenue_text(sorted(shown, key=lambda entry: (entry["currency"] != main, entry["currency"])))

    @admin.display(description="email", ordering="email")
    def contact(self, obj: Customer) -> str:
        return obj.email or mark_safe('<span class="lf-muted">no email</span>')

    # Words, not Django's boolean icons: a green tick on a contact we may no longer email read as "fine".
    @admin.display(description="suppressed", ordering="suppressed")
    def is_suppressed(self, obj: Customer) -> str:
        return "Suppressed" if obj.suppressed else "-"

    @admin.display(description="avatar")
    def avatar(self, obj: Customer) -> str:
        if not obj.avatar_url:
            return "-"
        return format_html(
            '<img src="{}" alt="" style="max-height:48px" referrerpolicy="no-referrer"> {}',
            obj.avatar_url,
            obj.avatar_url,
        )

    @admin.display(description="suppression")
    def suppression(self, obj: Customer) -> str:
        row = suppression_row(obj)
        return f"{row.reason} since {when(row.created_at)}" if row else "not suppressed"

    def add_done(self, request, form):
        """Add a contact by hand through customer_match: an existing email gets the contact reused."""
        data = form.cleaned_data
        match = customer_match(
            workspace=data["workspace"],
            channel=Customer.Channel.MANUAL,
            email=data["email"].strip(),
            external_id=data["external_id"].strip(),
            name=data["name"].strip(),
        )
        customer = match.customer
        if match.created:
            self.log_addition(request, customer, [{"added": {}}])
            self.message_user(request, f"Added contact “{customer}”.", messages.SUCCESS)
        else:
            self.message_user(
                request, f"“{customer}” was already a contact: blanks filled, nothing overwritten.", messages.INFO
            )
        return HttpResponseRedirect(reverse("admin:customers_customer_change", args=[customer.pk]))

    def change_view(self, request, object_id, form_url="", extra_context=None):
        obj = self.get_object(request, unquote(object_id))
        if obj is not None:
            extra_context = {
                **contact_sections(obj),
                "may_erase": self.allowed(request, self.erase_roles, obj),
                **(extra_context or {}),
            }
        return super().change_view(request, object_id, form_url, extra_context)
