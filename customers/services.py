"""The one customer-matching service (docs/matching.md), used by every path that names a person."""

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from django.db import IntegrityError, OperationalError, connection, transaction
from django.db.models import Case, F, Value, When
from django.utils import timezone

from customers.models import Customer, CustomerActivity
from lftrack.db import from_row, prepared_cursor
from lftrack.errors import Unprocessable
from webhooks.outbox import emitted_sql, event_emit, event_queue
from workspaces.models import Workspace

Kind = CustomerActivity.Kind
# Each lost race re-reads what the winner wrote; a handful of rounds settles any real contention.
MAX_ROUNDS = 5

_CUSTOMER = Customer._meta.db_table
_ACTIVITY = CustomerActivity._meta.db_table
# What a match reads (lftrack.db.from_row); the timestamps stay deferred.
_READ = ("id", "workspace_id", "email", "name", "avatar_url", "external_id", "source", "is_test")
# What a new customer's INSERT sends: its columns and its parameters' names.
_WRITTEN = (
    "workspace_id",
    "email",
    "name",
    "avatar_url",
    "external_id",
    "source",
    "is_test",
    "created_at",
    "updated_at",
)
# Its "created" activity's columns, each with its SQL expression: the customer's parameters, and its new id.
_LOGGED = {
    "workspace_id": "%(workspace_id)s",
    "customer_id": "id",
    "kind": "%(kind)s",
    "channel": "%(source)s",
    "external_id": "%(external_id)s",
    "detail": "%(detail)s",
    "created_at": "%(created_at)s",
}

# The email's owner and the external_id's holder. Each branch repeats its unique index's predicate
# (email <> '', external_id <> ''), so the planner uses both partial indexes (a BitmapOr) whatever
# the parameters; the mode (live or test) is the indexes' last column. No ORDER BY/LIMIT: each index yields at most one row, and "ORDER BY id LIMIT 1"
# (what .first() adds) makes PostgreSQL walk the primary key instead: a scan of the whole table for
# every new email.
_CANDIDATES_WHERE = """workspace_id = %(workspace_id)s AND is_test = %(is_test)s
    AND ((lower(email) = lower(%(email)s) AND email <> '') OR (external_id = %(external_id)s AND external_id <> ''))"""
_OWNS_EMAIL = "(lower(email) = lower(%(email)s) AND email <> '')"
_CANDIDATES_SQL = f"""SELECT {", ".join(_READ)}, {_OWNS_EMAIL} AS owns_email FROM {_CUSTOMER}
    WHERE {_CANDIDATES_WHERE}"""
# No conflict target: a clash on either unique index (lower(email), external_id) skips the insert.
# The customer, its "created" activity and, when an endpoint wants it, its `customer.created` webhook event
# (webhooks/outbox.py) in one statement; nothing logged or emitted when the insert was skipped.
_INSERT_AND_LOG = f"""WITH created AS (INSERT INTO {_CUSTOMER} ({", ".join(_WRITTEN)})
    VALUES ({", ".join(f"%({column})s" for column in _WRITTEN)})
    ON CONFLICT DO NOTHING RETURNING id, workspace_id, is_test
), logged AS (
    INSERT INTO {_ACTIVITY} ({", ".join(_LOGGED)}) SELECT {", ".join(_LOGGED.values())} FROM created
), hook AS ({
    emitted_sql(
        rows="created",
        workspace_id="created.workspace_id",
        type="'customer.created'",
        test="created.is_test",
        subject_id="created.id",
        customer_id="created.id",
    )
})"""
# The new customer's id and its event's id (NULL when no endpoint wants it).
_INSERTED_SQL = f"""{_INSERT_AND_LOG}
    SELECT id, (SELECT id FROM hook) AS hook_id FROM created"""
# First round: create the person (rule 4, or rule 5 with a new external_id) or, when a
# unique index says they are known, read the candidates: one round trip either way. The read shares
# the statement's snapshot, so it can miss a row that a concurrent request committed while this
# insert waited for it; the round then finds nobody, its own insert is skipped, and the next round
# reads the winner's row. Rows: created or not, the customer's columns, owns the email, the event's id.
_INSERT_OR_CANDIDATES_SQL = f"""{_INSERT_AND_LOG}
    SELECT TRUE AS created, id, {", ".join(f"NULL AS {column}" for column in _READ[1:])}, NULL AS owns_email,
        (SELECT id FROM hook) AS hook_id FROM created
    UNION ALL SELECT FALSE, {", ".join(_READ)}, {_OWNS_EMAIL}, NULL FROM {_CUSTOMER}
    WHERE NOT EXISTS (SELECT 1 FROM created) AND {_CANDIDATES_WHERE}"""

# Requests moving one external_id queue on this lock (_give_external_id).
_EXTERNAL_ID_LOCK_SQL = """SELECT pg_advisory_xact_lock(hashtextextended(%(lock)s, 0))"""


@dataclass(frozen=True)
class Match:
    customer: Customer
    created: bool
    moved_from: Customer | None = None  # the contact the sent external_id was taken from, if it moved


def customer_match(
    *,
    workspace: Workspace,
    channel: str,
    email: str = "",
    external_id: str = "",
    name: str = "",
    avatar_url: str = "",
    overwrite_name: bool = False,
    may_move_external_id: bool = True,
    test: bool = False,
) -> Match:
    """Find or create the workspace's one customer for this person (docs/matching.md).

    Email is the identity, matched case-insensitively and stored as first given; external_id is a
    movable label. Blanks are filled, a name or avatar is never replaced, except that campaign
    leads pass `overwrite_name`. The public pixel passes `may_move_external_id=False`: it matches
    by email alone, never takes an external_id from anyone and never replaces one; it only attaches
    an external_id nobody holds to a customer who has none.

    `test` (a test token's request) matches and creates in the workspace's test identity space only: a test
    contact never merges into, takes the external_id of, or stands for a live one (docs/matching.md).
    """
    if not email and not external_id:
        raise Unprocessable("customer needs email or external_id")
    request = _Request(
        workspace,
        channel,
        email or "",
        external_id or "",
        name or "",
        avatar_url or "",
        overwrite_name,
        may_move_external_id,
        test,
    )
    # Joins the caller's transaction without a savepoint of its own: every partial state a lost
    # race leaves behind is valid (a customer created, an id not yet moved), and the next round
    # starts from it. Only the identity UPDATEs that can lose a race run in savepoints.
    with transaction.atomic(savepoint=False):
        for round_ in range(MAX_ROUNDS):
            match = request.attempt(first=round_ == 0)
            if match is not None:
                return replace(match, moved_from=request.moved_from) if request.moved_from else match
    raise RuntimeError("customer_match did not settle")  # only under pathological contention


@dataclass
class _Request:
    workspace: Workspace
    channel: str
    email: str
    external_id: str
    name: str
    avatar_url: str
    overwrite_name: bool
    may_move: bool
    test: bool
    moved_from: Customer | None = None

    def attempt(self, first: bool) -> Match | None:
        """One round; None means a concurrent request won a race and the round must be re-read."""
        if first:
            created, owner, holder = self._insert_or_candidates()
            if created is not None:
                return Match(created, created=True)
        else:
            owner, holder = self._candidates()
        if not self.email:  # rule 5
            if holder is not None:
                self._fill(holder)
                return Match(holder, created=False)
            customer = self._insert(external_id=self.external_id)
            return None if customer is None else Match(customer, created=True)
        if owner is not None:  # rule 1
            if self.external_id and owner.external_id != self.external_id and not self._give_external_id(owner, holder):
                return None
            self._fill(owner)
            return Match(owner, created=False)
        if holder is not None and not holder.email and self.may_move:  # rule 2: the holder takes the email
            if not self._claim_email(holder):
                return None
            self._fill(holder)
            return Match(holder, created=False)
        # Rules 3 and 4. The pixel lands here for rule 2 too: the new customer gets the id only
        # when nobody holds it.
        customer = self._insert(external_id="" if holder else self.external_id)
        if customer is None:
            return None
        if holder is not None and self.may_move and not self._give_external_id(customer, holder):
            return None  # the customer exists now; the next round finds them as the owner (rule 1)
        return Match(customer, created=True)

    def _insert_or_candidates(self) -> tuple[Customer | None, Customer | None, Customer | None]:
        """(created customer, or None and the candidates): a brand-new person costs one statement."""
        written = self._written(self.external_id)
        with prepared_cursor() as cursor:
            cursor.execute(_INSERT_OR_CANDIDATES_SQL, {**self._insert_params(written), **self._candidate_params()})
            rows = cursor.fetchall()
        if rows and rows[0].created:
            return self._created(written, rows[0].id, rows[0].hook_id), None, None
        return (None, *self._pick(rows))

    def _candidates(self) -> tuple[Customer | None, Customer | None]:
        """(owner of the email, holder of the external_id); possibly the same customer."""
        with prepared_cursor() as cursor:
            cursor.execute(_CANDIDATES_SQL, self._candidate_params())
            return self._pick(cursor.fetchall())

    def _candidate_params(self) -> dict:
        return {
            "workspace_id": self.workspace.pk,
            "is_test": self.test,
            "email": self.email,
            "external_id": self.external_id,
        }

    def _pick(self, rows: Sequence[Any]) -> tuple[Customer | None, Customer | None]:
        owner = holder = None
        for row in rows:
            customer = from_row(Customer, row._asdict(), workspace=self.workspace)
            if row.owns_email:
                owner = customer
            if self.external_id and customer.external_id == self.external_id:
                holder = customer
        return owner, holder

    def _insert(self, *, external_id: str) -> Customer | None:
        """INSERT ... ON CONFLICT DO NOTHING: None when a concurrent request created this person first.

        A conflicting insert that has not committed yet makes this one wait for it; once it commits
        the next round reads the winner's row, once it rolls back this insert goes through.
        """
        written = self._written(external_id)
        with prepared_cursor() as cursor:
            cursor.execute(_INSERTED_SQL, self._insert_params(written))
            row = cursor.fetchone()
        return None if row is None else self._created(written, row.id, row.hook_id)

    def _written(self, external_id: str) -> dict:
        """The new customer's columns (_WRITTEN), as the INSERT sends them and the instance keeps them."""
        now = timezone.now()
        return {
            "workspace_id": self.workspace.pk,
            "email": self.email,
            "name": self.name,
            "avatar_url": self.avatar_url,
            "external_id": external_id,
            "source": self.channel,
            "is_test": self.test,
            "created_at": now,
            "updated_at": now,
        }

    def _insert_params(self, written: dict) -> dict:
        """The customer's columns, then what its "created" activity adds."""
        stamp = connection.ops.adapt_datetimefield_value(written["created_at"])
        return {
            **{column: written[column] for column in _WRITTEN},
            "created_at": stamp,
            "updated_at": stamp,
            "kind": Kind.CREATED.value,
            "detail": CustomerActivity._meta.get_field("detail").get_db_prep_value({}, connection),
        }

    def _created(self, written: dict, pk: int, event_id: int | None) -> Customer:
        if event_id is not None:  # its `customer.created`, written by the insert
            event_queue(event_id=event_id, workspace_id=self.workspace.pk, customer_id=pk)
        return from_row(Customer, {**written, "id": pk}, workspace=self.workspace)

    def _claim_email(self, holder: Customer) -> bool:
        """The email-less holder of the external_id takes the email, unless a concurrent request did."""
        if not _guarded(
            lambda: Customer.objects.filter(pk=holder.pk, email="").update(email=self.email, updated_at=timezone.now())
        ):
            return False
        holder.email = self.email
        self._log(holder, Kind.EMAIL_ADDED, detail={"email": self.email})
        return True

    def _give_external_id(self, customer: Customer, holder: Customer | None) -> bool:
        """Attach the sent external_id to `customer`, moving it away from its holder (rules 1 and 3).

        False when a concurrent request changed either customer first; the caller re-reads.
        """
        if not self.may_move:
            if holder is not None or customer.external_id:
                return True  # the pixel never moves an id, nor replaces one: the customer goes without
            holder = None
        previous = customer.external_id
        moved_from: list[Customer | None] = []

        def move() -> int:
            current = holder
            if self.may_move:
                # Requests moving the same id queue here instead of racing: under the lock the
                # holder read is the latest committed one, so the moves below find what they expect
                # and every contender gets through in a round or two. Released at commit (or with
                # this savepoint).
                with connection.cursor() as cursor:
                    lock = f"customers.external_id:{self.workspace.pk}:{self.test:d}:{self.external_id}"
                    cursor.execute(_EXTERNAL_ID_LOCK_SQL, {"lock": lock})
                holders = Customer.objects.filter(
                    workspace=self.workspace, is_test=self.test, external_id=self.external_id
                )[:1]
                current = next(iter(holders), None)
                if current is not None and current.pk == customer.pk:
                    return 0  # a concurrent request of this person did it; re-read
            now = timezone.now()
            # Both UPDATEs are conditional on what was read: a concurrent change makes one match no
            # row (0: re-read) or violate the unique index (IntegrityError: re-read).
            if current is not None and not Customer.objects.filter(pk=current.pk, external_id=self.external_id).update(
                external_id="", updated_at=now
            ):
                return 0
            moved_from[:] = [current]
            return Customer.objects.filter(pk=customer.pk, external_id=previous).update(
                external_id=self.external_id, updated_at=now
            )

        if not _guarded(move):
            return False
        customer.external_id = self.external_id
        source = moved_from[0]
        if source is not None:
            source.external_id = ""
            self.moved_from = source
            self._log(source, Kind.EXTERNAL_ID_MOVED_OUT, external_id=self.external_id, other=customer)
            event_emit(
                workspace_id=self.workspace.pk,
                type="customer.external_id_moved",
                subject_id=customer.pk,
                customer_id=customer.pk,
                detail={"external_id": self.external_id, "from_customer_id": source.pk},
                test=self.test,
            )
        self._log(
            customer,
            Kind.EXTERNAL_ID_MOVED_IN,
            external_id=self.external_id,
            other=source,
            detail={"previous_external_id": previous} if previous else {},
        )
        return True

    def _fill(self, customer: Customer) -> None:
        """Blanks take the sent values; a name is replaced only when the caller overwrites names.

        The UPDATE re-checks the blanks itself, so two requests filling the same blank at once
        cannot overwrite each other: the first value written stays.
        """
        changes = {}
        if self.name and customer.name != self.name and (self.overwrite_name or not customer.name):
            changes["name"] = Value(self.name) if self.overwrite_name else _if_blank("name", self.name)
        if self.avatar_url and not customer.avatar_url:
            changes["avatar_url"] = _if_blank("avatar_url", self.avatar_url)
        if not changes:
            return  # the common case: nothing to write, no round trip
        Customer.objects.filter(pk=customer.pk).update(**changes, updated_at=timezone.now())
        customer.refresh_from_db(fields=["name", "avatar_url"])

    def _log(
        self,
        customer: Customer,
        kind: str,
        *,
        external_id: str = "",
        other: Customer | None = None,
        detail: dict | None = None,
    ) -> None:
        CustomerActivity.objects.create(
            workspace=self.workspace,
            customer=customer,
            kind=kind,
            channel=self.channel,
            external_id=external_id,
            other_customer=other,
            detail=detail or {},
        )


def _if_blank(field: str, value: str) -> Case:
    return Case(When(**{field: ""}, then=Value(value)), default=F(field))


def _guarded(update: Callable[[], int]) -> int:
    """Run an identity UPDATE in a savepoint; 0 when a concurrent request got there first."""
    try:
        with transaction.atomic():
            return update()
    except IntegrityError:
        return 0
    except OperationalError as exc:
        # Two requests swapping ids between the same two customers can deadlock; the loser retries.
        if getattr(exc.__cause__, "sqlstate", None) == "40P01":
            return 0
        raise
