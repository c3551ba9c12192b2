"""Totals per link and per campaign over append-only rows, and how far each source table is added in."""

from django.db import models


class Watermark(models.Model):
    """Rows of `source` (a table name) with id <= last_id are in the totals; the admin counts the rest live."""

    source = models.CharField(max_length=63, unique=True)
    last_id = models.BigIntegerField(default=0)
    rolled_up_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.source} <= {self.last_id}"


class Numbers(models.Model):
    """A link's numbers in one currency, up to the watermarks of their source tables. `currency` is '' on the row
    of clicks and leads, which have no value; a sale's currency keys its row of sales, revenue and refunds, so
    no sum ever mixes currencies. Bot clicks and test-mode events and refunds are never counted."""

    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="+", db_index=False)
    link = models.ForeignKey("clicks.Link", on_delete=models.CASCADE, related_name="+", db_index=False)
    currency = models.CharField(max_length=3, blank=True)
    clicks = models.BigIntegerField(default=0, db_default=0)
    leads = models.BigIntegerField(default=0, db_default=0)
    sales = models.BigIntegerField(default=0, db_default=0)
    # bigint, not numeric: a sum past 2**63 - 1 (1,025 sales of the largest amount on one link and day) fails that
    # link's roll-up alone, which is left out and logged (rollups/services.py, `_rows_add`); numeric sums made every
    # workspace-wide read a fifth slower (docs/benchmarks.md, "Money sums: bigint, not numeric").
    revenue_cents = models.BigIntegerField(default=0, db_default=0)  # gross, in the currency's minor unit
    refunded_cents = models.BigIntegerField(default=0, db_default=0)  # refunds of those sales, whenever they came

    class Meta:
        abstract = True


class LinkTotals(Numbers):
    """A link's numbers of all time: the post and link pages."""

    class Meta:
        constraints = [models.UniqueConstraint(fields=["link", "currency"], name="rollups_linktotals_one_per_currency")]


class DailyTotals(Numbers):
    """A link's numbers of one UTC day (a sale's refunds count on the sale's day): charts and ranges of any length
    read a row per link, day and currency, however many clicks and events the day had."""

    day = models.DateField()

    class Meta:
        verbose_name_plural = "daily totals"
        constraints = [
            # Also serves the numbers of given links over a range of days.
            models.UniqueConstraint(fields=["link", "day", "currency"], name="rollups_dailytotals_one_per_day"),
        ]
        # A workspace's numbers over a range of days.
        indexes = [models.Index(fields=["workspace", "day"], name="rollups_dailytotals_range")]


class DailyBreakdowns(Numbers):
    """A link's numbers of one UTC day by one of its clicks' dimensions (rollups/selectors.py, BREAKDOWNS): clicks
    by their country or UTM field, conversions and refunds by their click's. `value` is '' where the click said
    nothing (no country known, no UTM field). Each click counts once per dimension: a dimension's rows of a day
    add up to the link's DailyTotals of that day."""

    day = models.DateField()
    dimension = models.CharField(max_length=12)
    value = models.CharField(max_length=200, blank=True)

    class Meta:
        verbose_name_plural = "daily breakdowns"
        constraints = [
            models.UniqueConstraint(
                fields=["link", "day", "dimension", "value", "currency"], name="rollups_dailybreakdowns_one_per_value"
            ),
        ]
        # A workspace's numbers by one dimension over a range of days.
        indexes = [models.Index(fields=["workspace", "dimension", "day"], name="rollups_dailybreakdowns_range")]


class WorkspaceBreakdowns(models.Model):
    """DailyBreakdowns added up over a workspace's links: what a request by country or UTM field reads when it names
    no link, post or campaign. A row per day, dimension, value and currency, however many links: a link's day has
    a row per country, and a workspace of 1,000 links read 651,000 rows for 30 days by country without it
    (docs/benchmarks.md, "By country, UTM field and tag")."""

    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="+", db_index=False)
    day = models.DateField()
    dimension = models.CharField(max_length=12)
    value = models.CharField(max_length=200, blank=True)
    currency = models.CharField(max_length=3, blank=True)
    clicks = models.BigIntegerField(default=0, db_default=0)
    leads = models.BigIntegerField(default=0, db_default=0)
    sales = models.BigIntegerField(default=0, db_default=0)
    revenue_cents = models.BigIntegerField(default=0, db_default=0)
    refunded_cents = models.BigIntegerField(default=0, db_default=0)

    class Meta:
        verbose_name_plural = "workspace breakdowns"
        constraints = [
            # Also serves a workspace's rows of one dimension over a range of days.
            models.UniqueConstraint(
                fields=["workspace", "dimension", "day", "value", "currency"],
                name="rollups_workspacebreakdowns_one_per_value",
            ),
        ]


class CampaignTotals(models.Model):
    """A campaign's leads up to the watermark of campaigns_campaignlead; its enrollments by state, sends,
    complaints and unsubscribes up to the watermark of rollups_campaignnumberdelta."""

    campaign = models.OneToOneField(
        "campaigns.Campaign", on_delete=models.CASCADE, primary_key=True, related_name="totals"
    )
    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="+")
    leads = models.BigIntegerField(default=0)
    enrollments_active = models.BigIntegerField(db_default=0)  # the leads roll-up inserts rows without it
    enrollments_stopped = models.BigIntegerField(db_default=0)
    enrollments_completed = models.BigIntegerField(db_default=0)
    sends = models.BigIntegerField(db_default=0)
    complaints = models.BigIntegerField(db_default=0)
    unsubscribes = models.BigIntegerField(db_default=0)


class CampaignNumberDelta(models.Model):
    """How one statement changed a campaign's numbers, logged by database triggers (migrations 0003 and 0007) on
    enrollments, email sends and suppressions inside that statement: the log holds exactly the committed
    changes. `roll_up_numbers` adds rows up to the watermark into CampaignTotals and deletes them.

    No foreign-key constraint: deleting a campaign deletes its enrollments, whose triggers log rows for
    it while it goes (a constraint would fail at commit); the roll-up skips campaigns gone by then.
    """

    campaign = models.ForeignKey(
        "campaigns.Campaign", on_delete=models.DO_NOTHING, db_constraint=False, db_index=False, related_name="+"
    )
    enrollments_active = models.IntegerField(default=0)
    enrollments_stopped = models.IntegerField(default=0)
    enrollments_completed = models.IntegerField(default=0)
    sends = models.IntegerField(default=0)
    complaints = models.IntegerField(default=0)
    unsubscribes = models.IntegerField(default=0)
    # The sends' rows (migration 0007) also say which step and UTC day of `sent_at` they changed, and the
    # failed sends: rolled up into DailyStepSends too. NULL on the rows of enrollments and suppressions.
    position = models.IntegerField(null=True)
    day = models.DateField(null=True)
    failed = models.IntegerField(db_default=0)

    class Meta:
        indexes = [
            # The admin's tail: a campaign's deltas above the watermark.
            models.Index(fields=["campaign", "id"], name="rollups_numberdelta_tail"),
        ]


class DailyStepSends(models.Model):
    """A campaign step's emails sent and failed on one UTC day (of the send's `sent_at`), up to the watermark of
    the delta log: the funnel on the campaign page reads a row per step and day, however many emails went."""

    campaign = models.ForeignKey("campaigns.Campaign", on_delete=models.CASCADE, related_name="+", db_index=False)
    position = models.PositiveIntegerField()
    day = models.DateField()
    sent = models.BigIntegerField(default=0)
    failed = models.BigIntegerField(default=0)

    class Meta:
        verbose_name_plural = "daily step sends"
        constraints = [
            # Also serves a campaign's rows (the funnel).
            models.UniqueConstraint(fields=["campaign", "position", "day"], name="rollups_dailystepsends_one_per_day"),
        ]


class DailyClickKinds(models.Model):
    """A link's people's clicks of one UTC day by device type, browser and referrer domain (clicks/agents.py),
    up to the watermark of clicks_click: the dashboard's breakdowns over any range read a few rows per link and
    day, however many clicks the day had. `value` is '' for a click that said nothing (no referrer)."""

    class Kind(models.TextChoices):
        DEVICE = "device"
        BROWSER = "browser"
        REFERRER = "referrer"

    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="+", db_index=False)
    link = models.ForeignKey("clicks.Link", on_delete=models.CASCADE, related_name="+", db_index=False)
    day = models.DateField()
    kind = models.CharField(max_length=10, choices=Kind.choices)
    value = models.CharField(max_length=255, blank=True)
    clicks = models.BigIntegerField(default=0)

    class Meta:
        verbose_name_plural = "daily click kinds"
        constraints = [
            models.UniqueConstraint(
                fields=["link", "day", "kind", "value"], name="rollups_dailyclickkinds_one_per_value"
            ),
        ]
        # A workspace's clicks over a range of days.
        indexes = [models.Index(fields=["workspace", "day"], name="rollups_dailyclickkinds_range")]
