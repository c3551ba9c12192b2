"""Campaigns, their sequence emails and recipients, suppressions and sends in the back office."""
from django.contrib import admin
from django.db.models import Exists, OuterRef, QuerySet, Subquery
from django.db.models.functions import Lower
from django.urls import reverse
from django.utils.html import format_html

from campaigns.models import Campaign, CampaignEmail, CampaignLead, EmailSend, Enrollment, Suppression
from lftrack.admin import MEMBERS, OWNERS, WorkspaceScopedAdmin, WorkspaceScopedInline, as_id, count_of, scope

SENT = EmailSend.Status.SENT


def _unsubscribed_enrollments() -> QuerySet:
    """Enrollments of the outer campaign whose address is on the workspace's list as unsubscribed."""
    return Enrollment.objects.filter(campaign=OuterRef("pk")).filter(
        Exists(
            Suppression.objects.filter(
                workspace=OuterRef("workspace"),
                email=Lower(OuterRef("customer__email")),
                reason=Suppression.Reason.UNSUBSCRIBED,
            )
        )
    )


def with_campaign_numbers(queryset: QuerySet) -> QuerySet:
    """Leads, enrollments by state, sends, unsubscribes and complaints: one correlated subquery each."""
    enrollments = Enrollment.objects.filter(campaign=OuterRef("pk"))
    sends = EmailSend.objects.filter(campaign=OuterRef("pk"))
    return queryset.annotate(
        n_leads=count_of(CampaignLead.objects.filter(campaign=OuterRef("pk")), "campaign"),
        n_enrollments=count_of(enrollments, "campaign"),
        n_active=count_of(enrollments.filter(state=Enrollment.State.ACTIVE), "campaign"),
        n_stopped=count_of(enrollments.filter(state=Enrollment.State.STOPPED), "campaign"),
        n_completed=count_of(enrollments.filter(state=Enrollment.State.COMPLETED), "campaign"),
        n_sends=count_of(sends.filter(status=SENT), "campaign"),
        n_unsubscribes=count_of(_unsubscribed_enrollments(), "campaign"),
        n_complaints=count_of(sends.filter(complained_at__isnull=False), "campaign"),
    )


def recipients_url(campaign_id: int, **params: str) -> str:
    query = "".join(f"&{key}={value}" for key, value in params.items())
    return reverse("admin:campaigns_enrollment_changelist") + f"?campaign__id__exact={campaign_id}{query}"


class CampaignEmailInline(WorkspaceScopedInline):
    """The sequence: owners edit steps; activation goes through the campaigns service."""

    model = CampaignEmail
    fields = ["position", "subject", "body", "delay_minutes", "active"]
    change_roles = OWNERS
    ordering = ["position"]
    can_delete = False  # deactivate instead: sends keep pointing at their step


@admin.register(Campaign)
class CampaignAdmin(WorkspaceScopedAdmin):
    view_roles = MEMBERS
    change_roles = OWNERS
    list_display = ["name", "slug", "status", "leads", "enrollments", "sends", "unsubscribes", "complaints", "recipients"]
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
    actions = []

    def get_queryset(self, request):
        return with_campaign_numbers(super().get_queryset(request))

    def save_formset(self, request, form, formset, change) -> None:
        for instance in formset.save(commit=False):
            instance.workspace_id = form.instance.workspace_id
            instance.save()
        formset.save_m2m()

    @admin.display(description="leads", ordering="n_leads")
    def leads(self, obj: Campaign) -> int:
        return obj.n_leads

    @admin.display(description="enrollments", ordering="n_enrollments")
    def enrollments(self, obj: Campaign) -> str:
        return format_html(
            "{} <span class=\"lf-muted\">({} active, {} stopped, {} completed)</span>",
            obj.n_enrollments, obj.n_active, obj.n_stopped, obj.n_completed,
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
    sends = EmailSend.objects.filter(enrollment=OuterRef("pk"), status=SENT).order_by("-sent_at", "-pk")
    return Subquery(sends.values(field)[:1])


@admin.register(Enrollment)
class EnrollmentAdmin(WorkspaceScopedAdmin):
    """Campaign recipients: who is enrolled, in which state, when the next email goes, what went last."""

    view_roles = MEMBERS
    manage_roles = OWNERS
    list_display = ["contact", "contact_name", "campaign", "state", "enrolled_at", "next_send_at", "last_email"]
    list_display_links = None
    list_filter = ["state", "campaign", "workspace"]
    list_select_related = ["customer", "campaign"]
    search_fields = ["customer__email", "customer__name", "customer__external_id"]
    ordering = ["-enrolled_at", "-pk"]
    actions = []

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

    @admin.display(description="last email sent", ordering="last_send_at")
    def last_email(self, obj: Enrollment) -> str:
        if obj.last_send_at is None:
            return "-"
        subject = obj.last_send_subject or "(step removed)"
        return f"#{obj.last_send_position} {subject}, {obj.last_send_at:%Y-%m-%d %H:%M} UTC"

    def changelist_view(self, request, extra_context=None):
        title = "Recipients"
        campaign_id = as_id(request.GET.get("campaign__id__exact"))
        if campaign_id is not None:
            campaign = scope(Campaign.objects.filter(pk=campaign_id), request, self.visible_roles).first()
            if campaign is not None:
                title = f"Recipients of {campaign}"
        return super().changelist_view(request, {"title": title, **(extra_context or {})})


@admin.register(Suppression)
class SuppressionAdmin(WorkspaceScopedAdmin):
    view_roles = MEMBERS
    list_display = ["email", "reason", "created_at"]
    list_filter = ["reason", "workspace"]
    search_fields = ["email"]
    ordering = ["-created_at", "-pk"]
    fields = ["email", "reason", "created_at"]
    readonly_fields = fields
    actions = []


@admin.register(EmailSend)
class EmailSendAdmin(WorkspaceScopedAdmin):
    view_roles = MEMBERS
    list_display = ["sent_at", "to_email", "campaign", "position", "status", "complained_at"]
    list_filter = ["status", "campaign", "workspace"]
    list_select_related = ["campaign"]
    search_fields = ["to_email"]
    ordering = ["-sent_at", "-pk"]
    fields = ["sent_at", "to_email", "campaign", "position", "status", "message_id", "error", "complained_at"]
    readonly_fields = fields
    actions = []
