"""The one customer-matching service (CONTRACT.md section 5), used by every path that names a person."""
from dataclasses import dataclass

from django.db import IntegrityError, OperationalError, connection, transaction
from django.db.models import Value
from django.db.models.functions import Lower
from django.utils import timezone

from customers.models import Customer, CustomerActivity
from lftrack.errors import Unprocessable
from workspaces.models import Workspace

Kind = CustomerActivity.Kind
# Each lost race re-reads what the winner wrote; a handful of rounds settles any real contention.
MAX_ROUNDS = 5


@dataclass(frozen=True)
class Match:
    customer: Customer
    created: bool


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
) -> Match:
    """Find or create the workspace's one customer for this person.

    Email is the identity; external_id is a movable label. Conversions fill blanks only; campaign
    leads pass `overwrite_name`; the public pixel passes `may_move_external_id=False`, so it matches
    by email alone and never takes an external_id from anyone.
    """
    if not email and not external_id:
        raise Unprocessable("customer needs email or external_id")
    request = _Request(workspace, channel, email, external_id, name, avatar_url, overwrite_name, may_move_external_id)
    # Joins the caller's transaction without a savepoint of its own: every partial state a lost
    # race leaves behind is valid, and the next round starts from it.
    with transaction.atomic(savepoint=False):
        for _ in range(MAX_ROUNDS):
            match = request.attempt()
            if match is not None:
                return match
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

    def attempt(self) -> Match | None:
        """One round; None means a concurrent request won a race and the round must be re-read."""
        if not self.email:
            return self._by_external_id_only()
        owner = self._owner_of_email()
        if owner is not None:  # rule 1
            if self.external_id and owner.external_id != self.external_id:
                if not self._give_external_id(owner):
                    return None
            self._fill(owner)
            return Match(owner, created=False)
        holder = self._holder_of_external_id() if self.external_id else None
        if holder is not None and not holder.email and self.may_move:  # rule 2: the holder takes the email
            if not self._claim_email(holder):
                return None
            self._fill(holder)
            return Match(holder, created=False)
        # rules 3 and 4; the pixel lands here too, attaching an id only when nobody holds it
        customer = self._insert(external_id="" if holder else self.external_id)
        if customer is None:
            return None
        if holder is not None and not self._give_external_id(customer):
            return None
        return Match(customer, created=True)

    def _by_external_id_only(self) -> Match | None:  # rule 5
        holder = self._holder_of_external_id()
        if holder is not None:
            self._fill(holder)
            return Match(holder, created=False)
        customer = self._insert(external_id=self.external_id)
        return None if customer is None else Match(customer, created=True)

    def _owner_of_email(self) -> Customer | None:
        # lower() on both sides, and the index's own predicate, so the planner uses the unique index.
        return (
            Customer.objects.alias(email_lower=Lower("email"))
            .filter(workspace=self.workspace, email_lower=Lower(Value(self.email)))
            .exclude(email="")
            .first()
        )

    def _holder_of_external_id(self) -> Customer | None:
        return Customer.objects.filter(workspace=self.workspace, external_id=self.external_id).first()

    def _insert(self, *, external_id: str) -> Customer | None:
        """INSERT ... ON CONFLICT DO NOTHING: None when a concurrent request created this person first."""
        now = timezone.now()
        table = Customer._meta.db_table
        with connection.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {table} (workspace_id, email, name, avatar_url, external_id, source, created_at,"
                " updated_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING RETURNING id",
                [
                    self.workspace.pk,
                    self.email,
                    self.name,
                    self.avatar_url,
                    external_id,
                    self.channel,
                    connection.ops.adapt_datetimefield_value(now),
                    connection.ops.adapt_datetimefield_value(now),
                ],
            )
            row = cursor.fetchone()
        if row is None:
            return None
        customer = Customer(
            pk=row[0],
            workspace=self.workspace,
            email=self.email,
            name=self.name,
            avatar_url=self.avatar_url,
            external_id=external_id,
            source=self.channel,
            created_at=now,
            updated_at=now,
        )
        self._log(customer, Kind.CREATED, external_id=external_id)
        return customer

    def _claim_email(self, holder: Customer) -> bool:
        """The email-less holder of the external_id takes the email, unless a concurrent request did."""
        if not _guarded(
            lambda: Customer.objects.filter(pk=holder.pk, email="").update(
                email=self.email, updated_at=timezone.now()
            )
        ):
            return False
        holder.email = self.email
        self._log(holder, Kind.EMAIL_ADDED, detail={"email": self.email})
        return True

    def _give_external_id(self, customer: Customer) -> bool:
        """Attach the sent external_id to `customer`, moving it away from its holder (rule 1, 3)."""
        holder = self._holder_of_external_id()
        if holder is not None and not self.may_move:
            return True  # the pixel never moves an id: the customer simply does not get it
        if customer.external_id and not self.may_move:
            return True  # nor overwrites one
        previous = customer.external_id

        def move() -> int:
            if holder is not None:
                Customer.objects.filter(pk=holder.pk, external_id=self.external_id).update(
                    external_id="", updated_at=timezone.now()
                )
            return Customer.objects.filter(pk=customer.pk).update(
                external_id=self.external_id, updated_at=timezone.now()
            )

        if not _guarded(move):
            return False
        customer.external_id = self.external_id
        if holder is not None:
            self._log(holder, Kind.EXTERNAL_ID_MOVED_OUT, external_id=self.external_id, other=customer)
        self._log(
            customer,
            Kind.EXTERNAL_ID_MOVED_IN,
            external_id=self.external_id,
            other=holder,
            detail={"previous_external_id": previous} if previous else {},
        )
        return True

    def _fill(self, customer: Customer) -> None:
        """Blanks take the sent values; a name is replaced only when the caller overwrites names."""
        changes = {}
        if self.name and (self.overwrite_name or not customer.name) and customer.name != self.name:
            changes["name"] = self.name
        if self.avatar_url and not customer.avatar_url:
            changes["avatar_url"] = self.avatar_url
        if changes:
            Customer.objects.filter(pk=customer.pk).update(**changes, updated_at=timezone.now())
            for field, value in changes.items():
                setattr(customer, field, value)

    def _log(self, customer: Customer, kind: str, *, external_id: str = "", other=None, detail=None) -> None:
        CustomerActivity.objects.create(
            workspace=self.workspace,
            customer=customer,
            kind=kind,
            channel=self.channel,
            external_id=external_id,
            other_customer=other,
            detail=detail or {},
        )


def _guarded(update) -> int:
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
