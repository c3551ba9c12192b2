"""Campaign, CampaignPost, CampaignEmail, Enrollment, CampaignLead, Suppression and EmailSend."""

from django.db import models
from django.db.models import Q


class Campaign(models.Model):
    class Status(models.TextChoices):
        ACTIVE = "active"
        PAUSED = "paused"  # set when recipients complain too often; an owner resumes it

    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="campaigns")
    slug = models.SlugField(max_length=100)
    name = models.CharField(max_length=200)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ACTIVE)
    paused_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["workspace", "slug"], name="campaigns_campaign_one_slug_per_workspace"),
            models.CheckConstraint(
                condition=Q(status__in=["active", "paused"]), name="campaigns_campaign_status_valid"
            ),
        ]

    def __str__(self) -> str:
        return self.name or self.slug


class CampaignPost(models.Model):
    """A post whose links enroll their converting customers in a campaign; a post is in one campaign at most.

    Owned here, not a field of the post: clicks sit below campaigns and never refer up to them.
    """

    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="+")
    # Not indexed alone: campaigns_campaignpost_by_camp serves "the posts of a campaign".
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="campaign_posts", db_index=False)
    post = models.OneToOneField("clicks.Post", on_delete=models.CASCADE, related_name="campaign_post")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["campaign", "post"], name="campaigns_campaignpost_by_camp")]

    def __str__(self) -> str:
        return f"{self.post} in {self.campaign}"


class CampaignEmail(models.Model):
    """One step of a campaign's sequence."""

    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="+")
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="emails")
    position = models.PositiveIntegerField()
    subject = models.CharField(max_length=255)
    # The plain-text part. For an HTML step it is generated from `html` on save (campaigns/html.py).
    body = models.TextField()
    # An HTML step (docs/email.md, "HTML emails"): its Markdown as written, and the HTML rendered from it and
    # sanitized on save; both empty for a plain-text step.
    markdown = models.TextField(blank=True, default="", db_default="")
    html = models.TextField(blank=True, default="", db_default="")
    # Counted from enrollment (or resume) for the first unsent step, from the previous send after that.
    delay_minutes = models.PositiveIntegerField(default=0)
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["campaign", "position"]
        constraints = [
            models.UniqueConstraint(fields=["campaign", "position"], name="campaigns_campaignemail_one_per_position"),
            models.CheckConstraint(
                condition=Q(markdown="", html="") | (~Q(markdown="") & ~Q(html="")),
                name="campaigns_campaignemail_html_from_markdown",
            ),
        ]

    def __str__(self) -> str:
        return f"#{self.position} {self.subject}"


class EmailLink(models.Model):
    """The tracked link standing for one destination in one step's email: every recipient's click on it goes
    through `GET /l/<key>` with a signed token naming their send (campaigns/tracking.py)."""

    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="+")
    campaign_email = models.ForeignKey(CampaignEmail, on_delete=models.CASCADE, related_name="links", db_index=False)
    link = models.OneToOneField("clicks.Link", on_delete=models.CASCADE, related_name="email_link")
    destination = models.URLField(max_length=2048)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            # By a digest: a 2,048-character URL may pass a B-tree entry's 2,704 bytes. Also the sender's lookup.
            models.UniqueConstraint(
                "campaign_email", models.functions.MD5("destination"), name="campaigns_emaillink_one_per_destination"
            ),
        ]

    def __str__(self) -> str:
        return self.destination


class Enrollment(models.Model):
    class State(models.TextChoices):
        PENDING = "pending"  # from a channel without a secret (the pixel): waits for the person's confirmation
        ACTIVE = "active"
        STOPPED = "stopped"
        COMPLETED = "completed"

    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="+")
    # Not indexed alone: the unique (campaign, customer) and campaigns_enrollment_recent lead with it.
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="enrollments", db_index=False)
    customer = models.ForeignKey("customers.Customer", on_delete=models.CASCADE, related_name="enrollments")
    state = models.CharField(max_length=10, choices=State.choices, default=State.ACTIVE)
    enrolled_at = models.DateTimeField()
    resumed_at = models.DateTimeField(null=True, blank=True)
    stopped_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    # Position of the last step sent (0: none yet); the next step is the first active one after it.
    last_sent_position = models.PositiveIntegerField(default=0)
    last_sent_at = models.DateTimeField(null=True, blank=True)
    next_send_at = models.DateTimeField(null=True, blank=True)
    # Double opt-in (docs/enrollment.md): a pending enrollment is deleted unconfirmed after confirm_by;
    # its confirmation email went at confirmation_sent_at; the name the pixel sent waits in held_name.
    confirm_by = models.DateTimeField(null=True, blank=True)
    confirmation_sent_at = models.DateTimeField(null=True, blank=True)
    held_name = models.CharField(max_length=200, blank=True, default="")
    # Its contact's mode, copied (a contact's never changes): a test contact's enrollment is mailed nothing (its
    # steps are recorded as `test` sends) and counted in no number (the roll-up triggers skip it).
    is_test = models.BooleanField(default=False, db_default=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["campaign", "customer"], name="campaigns_enrollment_one_per_customer"),
            models.CheckConstraint(
                condition=Q(state__in=["pending", "active", "stopped", "completed"]),
                name="campaigns_enrollment_state_valid",
            ),
        ]
        indexes = [
            # The sender's claim: per workspace, its active enrollments due now, oldest first (a fair share
            # of each workspace's; campaigns/sending.py).
            models.Index(
                fields=["workspace", "next_send_at"],
                condition=Q(state="active", next_send_at__isnull=False),
                name="campaigns_enrollment_due",
            ),
            # Recipients page: a campaign's enrollments newest first (the admin's order), with or
            # without a state filter; at 500,000 enrollments it replaced a sort of the whole campaign.
            models.Index(fields=["campaign", "-enrolled_at", "-id"], name="campaigns_enrollment_recent"),
            # The sender's confirmations to send and pending enrollments to expire: few rows.
            models.Index(fields=["confirm_by"], condition=Q(state="pending"), name="campaigns_enrollment_pending"),
            # The confirmations waiting, per workspace: a fair share of each (campaigns/confirmation.py)...
            models.Index(
                fields=["workspace", "confirm_by"],
                condition=Q(state="pending", confirmation_sent_at__isnull=True),
                name="campaigns_enrollment_unmailed",
            ),
            # ...and each one's quota, the confirmations it mailed over the last day.
            models.Index(
                fields=["workspace", "confirmation_sent_at"],
                condition=Q(confirmation_sent_at__isnull=False),
                name="campaigns_enrollment_mailed",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.customer} in {self.campaign}"


class CampaignLead(models.Model):
    """A lead counted in a campaign's numbers: one per created or reused enrollment, none on resume, none for a
    test contact's enrollment."""

    class Outcome(models.TextChoices):
        CREATED = "created"
        REUSED = "reused"

    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="+")
    # Not indexed alone: campaigns_campaignlead_tail and _recent lead with it.
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="leads", db_index=False)
    customer = models.ForeignKey("customers.Customer", on_delete=models.CASCADE, related_name="campaign_leads")
    enrollment = models.ForeignKey(Enrollment, on_delete=models.CASCADE, related_name="leads")
    outcome = models.CharField(max_length=10, choices=Outcome.choices)
    # "api" for the leads endpoint; a conversion's channel when it enrolled automatically.
    channel = models.CharField(max_length=10)
    # The conversion that enrolled them: a plain id, as conversions sit above campaigns.
    conversion_id = models.BigIntegerField(null=True, blank=True, db_index=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [
            models.Index(fields=["campaign", "created_at"], name="campaigns_campaignlead_recent"),
            # Campaign numbers: a campaign's leads above the roll-up watermark (rollups/); replaced the
            # campaign_id index one for one.
            models.Index(fields=["campaign", "id"], name="campaigns_campaignlead_tail"),
        ]


class Suppression(models.Model):
    """An address this workspace must not email again; a test token's report suppresses it in test mode only."""

    class Reason(models.TextChoices):
        UNSUBSCRIBED = "unsubscribed"
        BOUNCED = "bounced"
        COMPLAINED = "complained"
        # The person was erased: `email` holds the address's digest, never the address (campaigns/erasure.py).
        ERASED = "erased"

    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="suppressions")
    # Stored lower-cased: suppression is per lower(email). An erased person's is `sha256:<hex>` of it instead.
    email = models.CharField(max_length=254)
    reason = models.CharField(max_length=12, choices=Reason.choices)
    # Of the test identity space (customers.Customer.is_test): stops test contacts only, never a live one.
    is_test = models.BooleanField(default=False, db_default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["workspace", "email", "is_test"], name="campaigns_suppression_one_per_email_and_mode"
            ),
            models.CheckConstraint(
                condition=Q(email=models.functions.Lower("email")), name="campaigns_suppression_email_lower"
            ),
            models.CheckConstraint(
                condition=Q(reason__in=["unsubscribed", "bounced", "complained", "erased"]),
                name="campaigns_suppression_reason_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.email} ({self.reason})"


class EmailSend(models.Model):
    """One step mailed to one enrollment. Unique per (enrollment, position): a step never goes twice."""

    class Status(models.TextChoices):
        RESERVED = "reserved"  # the sender has it, not yet handed to SMTP: certainly not sent
        SENT = "sent"
        FAILED = "failed"  # refused for good, or handed over with no answer recorded (unconfirmed)
        TEST = "test"  # a test contact's step: recorded as due, never mailed, counted nowhere

    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="+")
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="sends")
    enrollment = models.ForeignKey(Enrollment, on_delete=models.CASCADE, related_name="sends")
    campaign_email = models.ForeignKey(CampaignEmail, null=True, on_delete=models.SET_NULL, related_name="sends")
    position = models.PositiveIntegerField()
    to_email = models.CharField(max_length=254)
    message_id = models.CharField(max_length=255, blank=True, default="")
    status = models.CharField(max_length=10, choices=Status.choices)
    error = models.TextField(blank=True, default="")
    sent_at = models.DateTimeField()
    complained_at = models.DateTimeField(null=True, blank=True)
    # The PostgreSQL backend pid of the worker holding a `reserved` row: once that backend is gone, the
    # worker died and the row is released (campaigns/sending.py, `_recover`).
    reserved_by = models.IntegerField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["enrollment", "position"], name="campaigns_emailsend_once_per_step"),
            # A test send went to nobody, so nobody complained of it: it stays out of the complaint numbers.
            models.CheckConstraint(
                condition=~Q(status="test") | Q(complained_at__isnull=True),
                name="campaigns_emailsend_test_never_complained",
            ),
        ]
        indexes = [
            # Complaint rate over a campaign's last 30 days of sends; daily limit per workspace.
            models.Index(fields=["campaign", "sent_at"], name="campaigns_emailsend_recent"),
            models.Index(fields=["workspace", "sent_at"], name="campaigns_emailsend_daily"),
            # A complaint finds the last send to that address.
            models.Index(fields=["workspace", "to_email", "-sent_at"], name="campaigns_emailsend_recipient"),
            # Each pass looks for reservations of dead workers: a handful of rows at most.
            models.Index(fields=["reserved_by"], condition=Q(status="reserved"), name="campaigns_emailsend_reserved"),
            # A provider's complaint names the message by its Message-ID (campaigns/complaints.py).
            models.Index(
                fields=["workspace", "message_id"], condition=~Q(message_id=""), name="campaigns_emailsend_message"
            ),
        ]


class ProviderHook(models.Model):
    """A workspace's credential for its email provider's bounce and complaint webhooks
    (campaigns/provider_hooks.py): HTTP basic auth `<workspace slug>:<secret>`, the secret shown once
    and only its SHA-256 digest kept."""

    workspace = models.OneToOneField("workspaces.Workspace", on_delete=models.CASCADE, related_name="+")
    digest = models.CharField(max_length=64)
    # For a provider that signs its webhooks (Mailgun): the key it signs with, as its dashboard shows it.
    # Kept as given, since checking a signature needs it; never printed back.
    signing_keys = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"email provider webhooks of workspace {self.workspace_id}"


class Segment(models.Model):
    """A saved filter over a workspace's contacts (campaigns/segments.py compiles `filters` to one query)."""

    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="+", db_index=False)
    name = models.CharField(max_length=200)
    # {"tags": [...], "sources": [...], "campaign_id": ..., "enrollment_states": [...], "converted": bool,
    # "first_touch_post_id": ..., "first_touch_link_id": ..., "created_from": "YYYY-MM-DD", "created_to": ...},
    # checked by campaigns/segments.py before it is saved.
    filters = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["workspace", "name"], name="campaigns_segment_one_per_name"),
        ]

    def __str__(self) -> str:
        return self.name


class Broadcast(models.Model):
    """A one-off email to a segment (docs/email.md, "Broadcasts"): its recipients are fixed when it starts
    (BroadcastRecipient rows), then the sender mails them beside the sequences (campaigns/broadcast_sending.py)."""

    class Status(models.TextChoices):
        DRAFT = "draft"
        SCHEDULED = "scheduled"  # starts at scheduled_at ("send now" schedules it for now)
        SENDING = "sending"  # recipients fixed; the sender works through them
        PAUSED = "paused"  # recipients complained too often, or paused by hand; resuming sends the rest
        SENT = "sent"  # every recipient done
        CANCELLED = "cancelled"

    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="+", db_index=False)
    segment = models.ForeignKey(Segment, on_delete=models.PROTECT, related_name="broadcasts")
    name = models.CharField(max_length=200)
    subject = models.CharField(max_length=255)
    # As a step's (campaigns/steps.py): the plain text, and for an HTML broadcast its Markdown and sanitized HTML.
    body = models.TextField()
    markdown = models.TextField(blank=True, default="")
    html = models.TextField(blank=True, default="")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.DRAFT)
    scheduled_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    paused_at = models.DateTimeField(null=True, blank=True)
    # The number of recipients fixed at the start (the progress bar's whole).
    total = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=["draft", "scheduled", "sending", "paused", "sent", "cancelled"]),
                name="campaigns_broadcast_status_valid",
            ),
            models.CheckConstraint(
                condition=Q(markdown="", html="") | (~Q(markdown="") & ~Q(html="")),
                name="campaigns_broadcast_html_from_markdown",
            ),
        ]
        indexes = [
            # The sender's look for broadcasts due to start: a handful of rows at most.
            models.Index(fields=["scheduled_at"], condition=Q(status="scheduled"), name="campaigns_broadcast_due"),
            models.Index(fields=["workspace", "-created_at"], name="campaigns_broadcast_recent"),
        ]

    def __str__(self) -> str:
        return self.name


class BroadcastRecipient(models.Model):
    """One contact a broadcast mails, fixed when it starts; unique per (broadcast, contact), so none is mailed
    twice, and its state is the message's, as an EmailSend's (campaigns/broadcast_sending.py)."""

    class Status(models.TextChoices):
        PENDING = "pending"  # fixed at the start, not yet taken by a sender
        HELD = "held"  # pending while its broadcast is paused: out of the sender's index until resumed
        RESERVED = "reserved"  # a sender has it, not yet handed to SMTP: certainly not sent
        SENT = "sent"
        FAILED = "failed"  # refused for good, or handed over with no answer recorded (unconfirmed)
        SKIPPED = "skipped"  # suppressed, or the contact lost their address or was erased, before it went

    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="+", db_index=False)
    # Not indexed alone: the unique (broadcast, customer) leads with it.
    broadcast = models.ForeignKey(Broadcast, on_delete=models.CASCADE, related_name="recipients", db_index=False)
    customer = models.ForeignKey("customers.Customer", on_delete=models.CASCADE, related_name="broadcast_recipients")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    to_email = models.CharField(max_length=254, blank=True, default="")
    message_id = models.CharField(max_length=255, blank=True, default="")
    error = models.TextField(blank=True, default="")
    sent_at = models.DateTimeField(null=True, blank=True)
    complained_at = models.DateTimeField(null=True, blank=True)
    # As EmailSend.reserved_by: the backend pid of the worker holding a `reserved` row.
    reserved_by = models.IntegerField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["broadcast", "customer"], name="campaigns_broadcastrecipient_once"),
            models.CheckConstraint(
                condition=Q(status__in=["pending", "held", "reserved", "sent", "failed", "skipped"]),
                name="campaigns_broadcastrecipient_status_valid",
            ),
        ]
        indexes = [
            # The sender's claim: per workspace, the pending recipients in id order (a fair share of each workspace's;
            # campaigns/broadcast_sending.py). Rows leave it as they are taken, so it stays the size of the backlog.
            models.Index(
                fields=["workspace", "id"], condition=Q(status="pending"), name="campaigns_bcrecipient_pending"
            ),
            # The daily limit counts a workspace's broadcast emails of the day beside its sequence emails.
            models.Index(fields=["workspace", "sent_at"], name="campaigns_bcrecipient_daily"),
            # Progress (sent / total / failed) per broadcast, and a broadcast's complaint rate.
            models.Index(fields=["broadcast", "status"], name="campaigns_bcrecipient_progress"),
            # Each pass looks for reservations of dead workers: a handful of rows at most.
            models.Index(fields=["reserved_by"], condition=Q(status="reserved"), name="campaigns_bcrecipient_reserved"),
            # A provider's complaint names the message by its Message-ID (campaigns/complaints.py).
            models.Index(
                fields=["workspace", "message_id"], condition=~Q(message_id=""), name="campaigns_bcrecipient_message"
            ),
        ]


class BroadcastLink(models.Model):
    """The tracked link standing for one destination in one broadcast, as EmailLink is for a step."""

    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="+")
    broadcast = models.ForeignKey(Broadcast, on_delete=models.CASCADE, related_name="links", db_index=False)
    link = models.OneToOneField("clicks.Link", on_delete=models.CASCADE, related_name="broadcast_link")
    destination = models.URLField(max_length=2048)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                "broadcast", models.functions.MD5("destination"), name="campaigns_broadcastlink_one_per_destination"
            ),
        ]

    def __str__(self) -> str:
        return self.destination
