"""customer_match: one test per rule of docs/matching.md, the name/avatar and pixel policies, races."""

import pytest
from django.db import IntegrityError, transaction

from customers.models import Customer, CustomerActivity
from customers.services import customer_match
from lftrack.errors import Unprocessable
from tests.conftest import run_in_threads
from tests.factories import CustomerFactory

pytestmark = pytest.mark.django_db

Kind = CustomerActivity.Kind


def match(workspace, channel="api", **person):
    return customer_match(workspace=workspace, channel=channel, **person)


def activity(customer):
    """(kind, channel, external_id, other customer id) of each of the customer's activity rows, in order."""
    return [
        (row.kind, row.channel, row.external_id, row.other_customer_id)
        for row in CustomerActivity.objects.filter(customer=customer).order_by("pk")
    ]


def reload(customer):
    return Customer.objects.get(pk=customer.pk)


# Rule 1: the email's owner is the customer; a sent external_id is attached to them.


def test_email_owner_is_matched_case_insensitively(acme):
    ada = CustomerFactory(workspace=acme, email="Ada@Example.com", name="Ada")
    result = match(acme, email="ada@EXAMPLE.com")
    assert (result.customer.pk, result.created) == (ada.pk, False)
    assert reload(ada).email == "Ada@Example.com"  # stored as first given
    assert Customer.objects.count() == 1


def test_external_id_attaches_to_email_owner(acme):
    ada = CustomerFactory(workspace=acme, email="ada@example.com")
    result = match(acme, email="ada@example.com", external_id="user_42")
    assert (result.customer.pk, result.customer.external_id) == (ada.pk, "user_42")
    assert reload(ada).external_id == "user_42"
    assert activity(ada) == [(Kind.EXTERNAL_ID_MOVED_IN, "api", "user_42", None)]


def test_external_id_moves_from_its_holder_to_the_email_owner(acme):
    holder = CustomerFactory(workspace=acme, email="old@example.com", external_id="user_42")
    ada = CustomerFactory(workspace=acme, email="ada@example.com")
    result = match(acme, email="ada@example.com", external_id="user_42")
    assert result.customer.pk == ada.pk and result.moved_from.pk == holder.pk  # the import's preview says so
    assert reload(ada).external_id == "user_42"
    assert reload(holder).external_id == ""
    # Recorded on both sides: from whom, to whom, through which channel (and when: created_at).
    assert activity(holder) == [(Kind.EXTERNAL_ID_MOVED_OUT, "api", "user_42", ada.pk)]
    assert activity(ada) == [(Kind.EXTERNAL_ID_MOVED_IN, "api", "user_42", holder.pk)]
    moved_out = CustomerActivity.objects.get(customer=holder)
    assert moved_out.created_at is not None and moved_out.workspace == acme


def test_email_owners_previous_external_id_is_replaced_and_recorded(acme):
    ada = CustomerFactory(workspace=acme, email="ada@example.com", external_id="crm_1")
    match(acme, email="ada@example.com", external_id="crm_2")
    assert reload(ada).external_id == "crm_2"
    moved_in = CustomerActivity.objects.get(customer=ada)
    assert moved_in.kind == Kind.EXTERNAL_ID_MOVED_IN
    assert moved_in.detail == {"previous_external_id": "crm_1"}


def test_a_match_without_a_move_names_no_one_it_moved_from(acme):
    CustomerFactory(workspace=acme, email="ada@example.com")
    assert match(acme, email="ada@example.com", external_id="unheld").moved_from is None
    assert match(acme, email="new@example.com").moved_from is None


def test_same_external_id_again_changes_nothing(acme):
    ada = CustomerFactory(workspace=acme, email="ada@example.com", external_id="user_42")
    assert match(acme, email="ada@example.com", external_id="user_42").customer.pk == ada.pk
    assert not CustomerActivity.objects.exists()


# Rule 2: no owner of the email, the external_id's holder has no email: the holder takes the email.


def test_email_less_holder_of_the_external_id_takes_the_email(acme):
    holder = CustomerFactory(workspace=acme, email="", external_id="user_42", name="")
    result = match(acme, email="Ada@Example.com", external_id="user_42", name="Ada")
    assert (result.customer.pk, result.created) == (holder.pk, False)
    holder = reload(holder)
    assert (holder.email, holder.external_id, holder.name) == ("Ada@Example.com", "user_42", "Ada")
    assert activity(holder) == [(Kind.EMAIL_ADDED, "api", "", None)]
    assert CustomerActivity.objects.get(customer=holder).detail == {"email": "Ada@Example.com"}
    assert Customer.objects.count() == 1


# Rule 3: no owner of the email, the holder has another email: a new customer takes the external_id.


def test_new_customer_takes_the_external_id_from_a_holder_with_another_email(acme):
    holder = CustomerFactory(workspace=acme, email="old@example.com", external_id="user_42")
    result = match(acme, email="new@example.com", external_id="user_42")
    assert result.created and result.moved_from.pk == holder.pk
    new = reload(result.customer)
    assert (new.email, new.external_id, new.source) == ("new@example.com", "user_42", "api")
    assert reload(holder).external_id == ""
    assert activity(holder) == [(Kind.EXTERNAL_ID_MOVED_OUT, "api", "user_42", new.pk)]
    assert activity(new) == [
        (Kind.CREATED, "api", "", None),
        (Kind.EXTERNAL_ID_MOVED_IN, "api", "user_42", holder.pk),
    ]


# Rule 4: no owner, no known external_id: a new customer.


def test_unknown_email_creates_a_customer_with_everything_sent(acme):
    result = match(
        acme, email="Ada@Example.com", external_id="user_42", name="Ada", avatar_url="https://cdn.example.com/a.png"
    )
    assert result.created
    ada = reload(result.customer)
    assert (ada.email, ada.external_id, ada.name, ada.avatar_url, ada.source) == (
        "Ada@Example.com",
        "user_42",
        "Ada",
        "https://cdn.example.com/a.png",
        "api",
    )
    assert ada.workspace == acme
    assert activity(ada) == [(Kind.CREATED, "api", "user_42", None)]


# Rule 5: only an external_id: its holder, or a new customer without an email.


def test_external_id_alone_matches_its_holder(acme):
    holder = CustomerFactory(workspace=acme, email="ada@example.com", external_id="user_42")
    result = match(acme, external_id="user_42")
    assert (result.customer.pk, result.created) == (holder.pk, False)
    assert not CustomerActivity.objects.exists()


def test_unknown_external_id_alone_creates_a_customer_without_email(acme):
    result = match(acme, external_id="user_42", name="Ada")
    assert result.created
    customer = reload(result.customer)
    assert (customer.email, customer.external_id, customer.name) == ("", "user_42", "Ada")
    assert activity(customer) == [(Kind.CREATED, "api", "user_42", None)]


# Rule 6: neither.


@pytest.mark.parametrize("person", [{}, {"name": "Ada"}, {"email": "", "external_id": ""}])
def test_neither_email_nor_external_id_is_422(acme, person):
    with pytest.raises(Unprocessable) as error:
        match(acme, **person)
    assert error.value.message == "customer needs email or external_id"
    assert not Customer.objects.exists()


# Names and avatars: conversions fill blanks only; campaign leads overwrite the name.


def test_conversions_never_overwrite_a_name_or_avatar(acme):
    ada = CustomerFactory(workspace=acme, email="ada@example.com", name="Ada", avatar_url="https://a.example/1.png")
    match(acme, email="ada@example.com", name="Someone Else", avatar_url="https://b.example/2.png")
    ada = reload(ada)
    assert (ada.name, ada.avatar_url) == ("Ada", "https://a.example/1.png")


def test_conversions_fill_a_blank_name_and_avatar(acme):
    ada = CustomerFactory(workspace=acme, email="ada@example.com", name="", avatar_url="")
    result = match(acme, email="ada@example.com", name="Ada", avatar_url="https://a.example/1.png")
    assert (result.customer.name, result.customer.avatar_url) == ("Ada", "https://a.example/1.png")
    ada = reload(ada)
    assert (ada.name, ada.avatar_url) == ("Ada", "https://a.example/1.png")


def test_a_name_through_the_external_id_holder_is_not_overwritten_either(acme):
    holder = CustomerFactory(workspace=acme, email="", external_id="user_42", name="Ada")
    match(acme, external_id="user_42", name="Someone Else")
    assert reload(holder).name == "Ada"


def test_overwrite_name_replaces_the_name_but_not_the_avatar(acme):
    ada = CustomerFactory(workspace=acme, email="ada@example.com", name="Ada", avatar_url="https://a.example/1.png")
    result = match(
        acme, email="ADA@example.com", name="Ada Lovelace", avatar_url="https://b.example/2.png", overwrite_name=True
    )
    assert result.customer.name == "Ada Lovelace"
    ada = reload(ada)
    assert (ada.name, ada.avatar_url) == ("Ada Lovelace", "https://a.example/1.png")


# The pixel (public key): may_move_external_id=False. It never moves or replaces an external_id.


def test_pixel_never_moves_an_external_id_to_the_email_owner(acme):
    holder = CustomerFactory(workspace=acme, email="old@example.com", external_id="user_42")
    ada = CustomerFactory(workspace=acme, email="ada@example.com")
    result = match(acme, "pixel", email="ada@example.com", external_id="user_42", may_move_external_id=False)
    assert result.customer.pk == ada.pk
    assert (reload(ada).external_id, reload(holder).external_id) == ("", "user_42")
    assert not CustomerActivity.objects.exists()


def test_pixel_never_replaces_an_external_id(acme):
    ada = CustomerFactory(workspace=acme, email="ada@example.com", external_id="crm_1")
    match(acme, "pixel", email="ada@example.com", external_id="crm_2", may_move_external_id=False)
    assert reload(ada).external_id == "crm_1"


def test_pixel_attaches_an_unheld_external_id_to_a_customer_without_one(acme):
    ada = CustomerFactory(workspace=acme, email="ada@example.com", external_id="")
    match(acme, "pixel", email="ada@example.com", external_id="user_42", may_move_external_id=False)
    assert reload(ada).external_id == "user_42"
    assert activity(ada) == [(Kind.EXTERNAL_ID_MOVED_IN, "pixel", "user_42", None)]


def test_pixel_does_not_give_an_email_to_the_email_less_holder(acme):
    holder = CustomerFactory(workspace=acme, email="", external_id="user_42")
    result = match(acme, "pixel", email="ada@example.com", external_id="user_42", may_move_external_id=False)
    assert result.created and result.customer.pk != holder.pk
    new = reload(result.customer)
    assert (new.email, new.external_id, new.source) == ("ada@example.com", "", "pixel")
    assert (reload(holder).email, reload(holder).external_id) == ("", "user_42")


def test_pixel_creates_without_taking_a_held_external_id(acme):
    holder = CustomerFactory(workspace=acme, email="old@example.com", external_id="user_42")
    result = match(acme, "pixel", email="new@example.com", external_id="user_42", may_move_external_id=False)
    assert reload(result.customer).external_id == ""
    assert reload(holder).external_id == "user_42"
    assert activity(result.customer) == [(Kind.CREATED, "pixel", "", None)]


# Identity is per workspace; every creation records its channel.


def test_identity_is_per_workspace(acme, globex):
    theirs = CustomerFactory(workspace=globex, email="ada@example.com", external_id="user_42")
    result = match(acme, email="ADA@example.com", external_id="user_42")
    assert result.created and result.customer.workspace == acme
    assert reload(theirs).external_id == "user_42"
    assert not CustomerActivity.objects.filter(customer=theirs).exists()


@pytest.mark.parametrize("channel", ["api", "pixel", "manual"])
def test_creation_records_how_the_customer_came_in(acme, channel):
    customer = match(acme, channel, email="ada@example.com").customer
    assert reload(customer).source == channel
    assert activity(customer) == [(Kind.CREATED, channel, "", None)]


def test_email_is_stored_as_first_given(acme):
    first = match(acme, email="Ada.Lovelace@Example.COM").customer
    again = match(acme, email="ada.lovelace@example.com").customer
    assert first.pk == again.pk
    assert reload(first).email == "Ada.Lovelace@Example.COM"


# The database itself enforces the identity rules.


def test_database_allows_one_customer_per_lowercased_email(acme):
    CustomerFactory(workspace=acme, email="ada@example.com")
    with pytest.raises(IntegrityError), transaction.atomic():
        CustomerFactory(workspace=acme, email="ADA@example.com")


def test_database_allows_one_holder_per_external_id(acme):
    CustomerFactory(workspace=acme, external_id="user_42")
    with pytest.raises(IntegrityError), transaction.atomic():
        CustomerFactory(workspace=acme, external_id="user_42")


def test_customers_without_email_or_external_id_do_not_clash(acme):
    CustomerFactory(workspace=acme, email="", external_id="a")
    CustomerFactory(workspace=acme, email="", external_id="b")
    CustomerFactory(workspace=acme, email="c@example.com", external_id="")
    CustomerFactory(workspace=acme, email="d@example.com", external_id="")
    assert Customer.objects.count() == 4


# Races: settled by the database, on PostgreSQL, with real threads.


@pytest.mark.django_db(transaction=True)
def test_sixteen_concurrent_matches_for_one_new_person_make_one_customer(acme):
    results = run_in_threads(
        16, lambda i: match(acme, email="Ada@Example.com" if i % 2 else "ada@example.com", external_id="user_42")
    )
    assert not [r for r in results if isinstance(r, Exception)], results
    ada = Customer.objects.get()
    assert {r.customer.pk for r in results} == {ada.pk}
    assert sum(r.created for r in results) == 1
    assert ada.external_id == "user_42"
    assert CustomerActivity.objects.filter(kind=Kind.CREATED).count() == 1


@pytest.mark.django_db(transaction=True)
def test_concurrent_people_claiming_one_external_id_leave_one_holder(acme):
    emails = [f"person{i}@example.com" for i in range(8)]
    results = run_in_threads(16, lambda i: match(acme, email=emails[i % 8], external_id="user_42"))
    assert not [r for r in results if isinstance(r, Exception)], results
    assert Customer.objects.count() == 8  # one per email, none duplicated
    assert Customer.objects.filter(external_id="user_42").count() == 1
    # Every move is recorded on both sides.
    assert (
        CustomerActivity.objects.filter(kind=Kind.EXTERNAL_ID_MOVED_OUT).count()
        == CustomerActivity.objects.filter(kind=Kind.EXTERNAL_ID_MOVED_IN, other_customer__isnull=False).count()
    )
