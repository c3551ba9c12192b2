"""Campaigns, their sequence emails and recipients, suppressions and sends in the back office."""

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import OuterRef, QuerySet, Subquery
from django.http import HttpResponseRedirect
from django.urls import path, reverse
from django.utils.html import format_html

from backoffice.base import ServiceFormAdmin, WorkspaceScopedAdmin, WorkspaceScopedStackedInline
from backoffice.display import when
from backoffice.email_preview import preview_view, send_test_view
from backoffice.exports import Column, CsvExportMixin
from backoffice.filters import ModeFilter
from backoffice.forms import WorkspaceChoiceForm
from backoffice.funnel import funnel_context
from backoffice.scoping import MEMBERS, OWNERS, scope
from backoffice.step_numbers import step_numbers_context
from campaigns.mail import subject_render
from campaigns.models import Campaign, CampaignEmail, EmailSend, Enrollment, Suppression
from campaigns.services import (
    campaign_create,
    campaign_email_activate,
    campaign_email_add,
    campaign_pause,
    campaign_resume,
    enrollment_resume,
    enrollment_stop,
    suppression_add,
)
from campaigns.steps import campaign_email_edit, step_content
from lftrack.db import as_id
from lftrack.errors import ServiceError
from rollups.selectors import campaigns_with_numbers

SENT = EmailSend.Status.SENT


class SendModeFilter(ModeFilter):
    field = "enrollment__is_test"  # a send is test as its enrollment is


def recipients_url(campaign_id: int, **params: str) -> str:
    query = "".join(f"&{key}={value}" for key, value in params.items())
    return reverse("admin:campaigns_enrollment_changelist") + f"?campaign__id__exact={campaign_id}{query}"


class CampaignEmailForm(forms.ModelForm):
    """A live step keeps its delay and stays live: the schedule of waiting enrollments was computed from them.
    A step is written in Markdown (an HTML email) or as plain text; Markdown wins when both are given."""

    class Meta:
        model = CampaignEmail
        fields = ["subject", "markdown", "body", "delay_minutes", "active"]
        widgets = {
            "markdown": forms.Textarea(attrs={"rows": 10, "cols": 80, "class": "lf-markdown"}),
            "body": forms.Textarea(attrs={"rows": 4, "cols": 60}),
        }
        labels = {"markdown": "HTML email (Markdown)", "body": "plain text"}
        help_texts = {
            "delay_minutes": "after enrollment for the first step, after the previous send for later ones",
            "markdown": "# heading, **bold**, *italic*, [a link](https://…), - lists, ![image](https://…); "
            "{{ name }} and {{ email }} are filled per contact. Sanitized on save; links are tracked when sent.",
            "body": "Only for a plain-text email; for an HTML email it is made from the Markdown on save.",
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["body"].required = False
        if self.instance.pk and self.instance.active:
            self.fields["active"].disabled = True
            self.fields["delay_minutes"].disabled = True

    def clean(self):
        data = super().clean()
        if self.has_changed():
            try:  # the service's rules, before anything is saved (save_formset saves through it)
                step_content(body=data.get("body") or "", markdown=data.get("markdown") or "")
            except ServiceError as exc:
                raise forms.ValidationError(exc.message) from None
        return data


class CampaignEmailInline(WorkspaceScopedStackedInline):
    """The sequence: owners add steps and edit their text; activating one schedules everyone waiting for it."""

    model = CampaignEmail
    form = CampaignEmailForm
    fields = ["position", "preview", "subject", "markdown", "body", "delay_minutes", "active"]
    readonly_fields = ["position", "preview"]
    add_roles = change_roles = OWNERS
    ordering = ["position"]
    can_delete = False  # sends keep pointing at their step; a step is never taken back once live

    @admin.display(description="preview")
    def preview(self, obj: CampaignEmail) -> str:
        if obj.pk is None:
            return "save the step first"
        url = reverse("admin:campaigns_campaign_preview", args=[obj.campaign_id, obj.position])
        return format_html('<a href="{}" class="button lf-preview-link">Preview and test</a>', url)


@admin.register(Campaign)
class CampaignAdmin(WorkspaceScopedAdmin):
    view_roles = MEMBERS
    add_roles = change_roles = OWNERS
    list_display = [
        "name",
        "slug",
        "status",
        "leads",
        "enrollments",
        "sends",
        "unsubscribes",
        "complaints",
        "recipients",
    ]
    list_filter = ["status", "workspace"]
    search_fields = ["name", "slug"]
    ordering = ["name", "pk"]
    numbers = ["leads", "enrollments", "sends", "unsubscribes", "complaints", "recipients"]
    fieldsets = [
        (None, {"fields": ["name", "slug", "status", "paused_at", "created_at"]}),
        ("Numbers", {"fields": numbers}),
    ]
    readonly_fields = ["slug", "status", "paused_at", "created_at", *numbers]
    inlines = [CampaignEmailInline]
    actions = ["pause_campaigns", "resume_campaigns"]

    @admin.action(description="Pause selected campaigns (hold their due emails)", permissions=["change"])
    def pause_campaigns(self, request, queryset) -> None:
        self._switch(request, queryset, Campaign.Status.ACTIVE, campaign_pause, "Paused")

    @admin.action(description="Resume selected paused campaigns", permissions=["change"])
    def resume_campaigns(self, request, queryset) -> None:
        self._switch(request, queryset, Campaign.Status.PAUSED, campaign_resume, "Resumed")

    def switch_view(self, request, object_id: str) -> HttpResponseRedirect:
        """The campaign page's Pause / Resume button: POST only, owners of its workspace only."""
        campaign = self.get_object(request, object_id)
        if request.method != "POST" or campaign is None or not self.has_change_permission(request, campaign):
            raise PermissionDenied
        if campaign.status == Campaign.Status.ACTIVE:
            campaign_pause(campaign=campaign)
            self.message_user(request, f"Paused {campaign}: due emails wait until you resume it.", messages.SUCCESS)
        else:
            campaign_resume(campaign=campaign)
            self.message_user(
                request, f"Resumed {campaign}: emails that fell due go out on the next pass.", messages.SUCCESS
            )
        return HttpResponseRedirect(reverse("admin:campaigns_campaign_change", args=[campaign.pk]))

    def get_urls(self):
        def view(function):
            return self.admin_site.admin_view(lambda request, **kwargs: function(self, request, **kwargs))

        switch = path(
            "<path:object_id>/switch/", self.admin_site.admin_view(self.switch_view), name="campaigns_campaign_switch"
        )
        preview = path(
            "<path:object_id>/steps/<str:position>/preview/", view(preview_view), name="campaigns_campaign_preview"
        )
        test = path(
            "<path:object_id>/steps/<str:position>/test/", view(send_test_view), name="campaigns_campaign_test_send"
        )
        return [switch, preview, test, *super().get_urls()]

    def _switch(self, request, queryset, status: str, service, done: str) -> None:
        """Run `service` on each selected campaign the user may change that is in `status`."""
        chosen = self.action_queryset(request, queryset).filter(status=status)
        campaigns = list(Campaign.objects.filter(pk__in=chosen.values("pk")).order_by("pk"))
        for campaign in campaigns:
            service(campaign=campaign)
        self.message_user(request, f"{done} {len(campaigns)} campaign(s).", messages.SUCCESS)

    def get_queryset(self, request):
        return campaigns_with_numbers(campaigns=super().get_queryset(request))

    def change_view(self, request, object_id, form_url="", extra_context=None):
        campaign = self.get_object(request, unquote(object_id))  # annotated with its numbers (get_queryset)
        if campaign is not None:
            funnel = funnel_context(campaign)
            extra_context = {
                "funnel": funnel,
                "step_numbers": step_numbers_context(campaign, sent=funnel["sent"]),
                **(extra_context or {}),
            }
        return super().change_view(request, object_id, form_url, extra_context)

    def get_fieldsets(self, request, obj=None):
        if obj is None:
            return [(None, {"fields": ["workspace", "name", "slug"]})]
        return super().get_fieldsets(request, obj)

    def get_readonly_fields(self, request, obj=None):
        return [] if obj is None else self.readonly_fields

    def get_inlines(self, request, obj):
        return [] if obj is None else self.inlines

    def save_model(self, request, obj, form, change) -> None:
        if change:
            Campaign.objects.filter(pk=obj.pk).update(name=obj.name)  # the only field edited here
            return
        created = campaign_create(workspace=obj.workspace, slug=obj.slug, name=obj.name)
        obj.pk, obj.created_at = created.pk, created.created_at

    def save_formset(self, request, form, formset, change) -> None:
        """New steps through campaign_email_add, activation through campaign_email_activate."""
        campaign = form.instance
        formset.save(commit=False)  # fills new_objects / changed_objects for the history message
        for step_form in formset.forms:
            if not step_form.has_changed():
                continue
            data = step_form.cleaned_data
            if step_form.instance.pk is None:
                campaign_email_add(
                    campaign=campaign,
                    subject=data["subject"],
                    body=data["body"] or "",
                    markdown=data["markdown"] or "",
                    delay_minutes=data["delay_minutes"],
                    active=data["active"],
                )
                continue
            step = step_form.instance
            campaign_email_edit(
                campaign_email=step, subject=data["subject"], body=data["body"] or "", markdown=data["markdown"] or ""
            )
            CampaignEmail.objects.filter(pk=step.pk).update(delay_minutes=data["delay_minutes"])
            if data["active"] and not step_form.initial.get("active"):
                campaign_email_activate(campaign_email=step)

    @admin.display(description="leads", ordering="n_leads")
    def leads(self, obj: Campaign) -> int:
        return obj.n_leads

    @admin.display(description="enrollments", ordering="n_enrollments")
    def enrollments(self, obj: Campaign) -> str:
        return format_html(
            '{} <span class="lf-muted">({} active, {} stopped, {} completed)</span>',
            obj.n_enrollments,
            obj.n_active,
            obj.n_stopped,
            obj.n_completed,
        )

    @admin.display(description="sends", ordering="n_sends")
    def sends(self, obj: Campaign) -> int:
        return obj.n_sends

    @admin.display(description="unsubscribes", ordering="n_unsubscribes")
    def unsubscribes(self, obj: Campaign) -> int:
        return obj.n_unsubscribes

    @admin.display(description="complaints", ordering="n_complaints")
    def complaints(self, obj: Campaign) -> int:
        return obj.n_complaints

    @admin.display(description="recipients")
    def recipients(self, obj: Campaign) -> str:
        return format_html('<a href="{}" class="recipients-link">Recipients</a>', recipients_url(obj.pk))


def _last_send(field: str) -> Subquery:
    # A test recipient's steps are `test` sends (mailed to nobody): shown as its progress.
    sends = EmailSend.objects.filter(enrollment=OuterRef("pk"), status__in=[SENT, EmailSend.Status.TEST])
    sends = sends.order_by("-sent_at", "-pk")
    return Subquery(sends.values(field)[:1])


def _last_subject(enrollment: Enrollment) -> str:
    """The last email sent to a recipient, as they read it (not the step's template text): "#2 Tips, Ada"."""
    if enrollment.last_send_at is None:
        return ""
    if enrollment.last_send_subject is None:
        return f"#{enrollment.last_send_position} (step removed)"
    customer = enrollment.customer
    return f"#{enrollment.last_send_position} {subject_render(enrollment.last_send_subject, name=customer.name, email=customer.email)}"


@admin.register(Enrollment)
class EnrollmentAdmin(CsvExportMixin, WorkspaceScopedAdmin):
    """Campaign recipients: who is enrolled, in which state, when the next email goes, what went last."""

    view_roles = MEMBERS
    manage_roles = OWNERS
    list_display = ["contact", "contact_name", "campaign", "state", "enrolled", "next_send", "last_email"]
    list_display_links = None
    list_filter = [ModeFilter, "state", "campaign", "workspace"]
    list_select_related = ["customer", "campaign"]
    search_fields = ["customer__email", "customer__name", "customer__external_id"]
    ordering = ["-enrolled_at", "-pk"]
    actions = ["stop_enrollments", "resume_enrollments"]
    export_name = "recipients"
    export_columns = [
        Column("email", lambda e: e.customer.email),
        Column("name", lambda e: e.customer.name),
        Column("campaign", lambda e: e.campaign.name),
        Column("state", lambda e: e.get_state_display()),
        Column("enrolled (UTC)", lambda e: e.enrolled_at),
        Column("next send (UTC)", lambda e: e.next_send_at),
        Column("last email", lambda e: _last_subject(e)),
        Column("last sent (UTC)", lambda e: e.last_send_at),
        Column("stopped (UTC)", lambda e: e.stopped_at),
        Column("completed (UTC)", lambda e: e.completed_at),
    ]

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .annotate(
                last_send_at=_last_send("sent_at"),
                last_send_position=_last_send("position"),
                last_send_subject=_last_send("campaign_email__subject"),
            )
        )

    def has_manage_permission(self, request, obj=None) -> bool:
        return self.allowed(request, self.manage_roles, obj)

    @admin.display(description="contact", ordering="customer__email")
    def contact(self, obj: Enrollment) -> str:
        return format_html(
            '<a href="{}">{}</a>', reverse("admin:customers_customer_change", args=[obj.customer_id]), obj.customer
        )

    @admin.display(description="name", ordering="customer__name")
    def contact_name(self, obj: Enrollment) -> str:
        return obj.customer.name

    @admin.display(description="enrolled", ordering="enrolled_at")
    def enrolled(self, obj: Enrollment) -> str:
        return when(obj.enrolled_at)

    @admin.display(description="next send", ordering="next_send_at")
    def next_send(self, obj: Enrollment) -> str:
        return when(obj.next_send_at)

    @admin.display(description="last email sent", ordering="last_send_at")
    def last_email(self, obj: Enrollment) -> str:
        if obj.last_send_at is None:
            return "-"
        return f"{_last_subject(obj)}, {when(obj.last_send_at)}"

    def get_list_display(self, request):
        columns = super().get_list_display(request)
        if as_id(request.GET.get("campaign__id__exact")) is not None:
            columns = [column for column in columns if column != "campaign"]  # the title names it
        return columns

    def _chosen(self, request, queryset: QuerySet, state: str) -> list[Enrollment]:
        rows = self.action_queryset(request, queryset, self.manage_roles).filter(state=state)
        return list(Enrollment.objects.filter(pk__in=rows.values("pk")).order_by("pk"))

    @admin.action(description="Stop selected enrollments", permissions=["manage"])
    def stop_enrollments(self, request, queryset) -> None:
        stopped = self._chosen(request, queryset, Enrollment.State.ACTIVE)
        with transaction.atomic():
            for enrollment in stopped:
                enrollment_stop(enrollment=enrollment)
        self.message_user(request, f"Stopped {len(stopped)} enrollment(s).", messages.SUCCESS)

    @admin.action(description="Resume selected enrollments", permissions=["manage"])
    def resume_enrollments(self, request, queryset) -> None:
        resumed, suppressed = 0, 0
        for enrollment in self._chosen(request, queryset, Enrollment.State.STOPPED):
            try:
                enrollment_resume(enrollment=enrollment)
                resumed += 1
            except ServiceError:  # "email is suppressed": that address is never emailed again
                suppressed += 1
        note = f"; {suppressed} left stopped: address suppressed" if suppressed else ""
        self.message_user(request, f"Resumed {resumed} enrollment(s){note}.", messages.SUCCESS)

    def changelist_view(self, request, extra_context=None):
        title = "Recipients"
        campaign_id = as_id(request.GET.get("campaign__id__exact"))
        if campaign_id is not None:
            campaign = scope(Campaign.objects.filter(pk=campaign_id), request, self.visible_roles).first()
            if campaign is not None:
                title = f"Recipients of {campaign}"
        return super().changelist_view(request, {"title": title, **(extra_context or {})})


class SuppressionAddForm(WorkspaceChoiceForm):
    email = forms.EmailField(max_length=254)
    reason = forms.ChoiceField(choices=Suppression.Reason.choices, initial=Suppression.Reason.UNSUBSCRIBED)


@admin.register(Suppression)
class SuppressionAdmin(ServiceFormAdmin):
    """The workspace's do-not-email list. Owners add to it (stopping that address's enrollments); nobody removes."""

    view_roles = MEMBERS
    add_roles = OWNERS
    list_display = ["email", "reason", "created_at"]
    list_filter = [ModeFilter, "reason", "workspace"]
    search_fields = ["email"]
    ordering = ["-created_at", "-pk"]
    fields = ["email", "reason", "created_at"]
    readonly_fields = fields
    actions = []
    add_form = SuppressionAddForm
    add_title = "Suppress an address"
    add_submit = "Suppress"
    add_intro = "No campaign will email this address again; its active enrollments stop now."

    def add_done(self, request, form):
        data = form.cleaned_data
        row = suppression_add(workspace=data["workspace"], email=data["email"], reason=data["reason"], channel="manual")
        self.message_user(request, f"{row.email} is suppressed ({row.reason}).", messages.SUCCESS)
        return HttpResponseRedirect(reverse("admin:campaigns_suppression_changelist"))


@admin.register(EmailSend)
class EmailSendAdmin(WorkspaceScopedAdmin):
    view_roles = MEMBERS
    list_display = ["sent_at", "to_email", "campaign", "position", "status", "complained_at"]
    list_filter = [SendModeFilter, "status", "campaign", "workspace"]
    list_select_related = ["campaign"]
    search_fields = ["to_email"]
    ordering = ["-sent_at", "-pk"]
    fields = ["sent_at", "to_email", "campaign", "position", "status", "message_id", "error", "complained_at"]
    readonly_fields = fields
    actions = []
