"""Back-office logins: guessers locked out per account and address, per address, and per account from new addresses,
while an owner still signs in from an address they used before; an operator unlocks."""

from io import StringIO

import pytest
from django.conf import settings
from django.core.management import call_command
from django.test import Client

from tests.factories import UserFactory

LOGIN = "/admin/login/"
LIMIT = 5
RIGHT = "right horse battery"
HOME = "198.51.100.7"  # where alice signs in from


def attempt(username: str, password: str, address: str = HOME) -> int:
    return Client(REMOTE_ADDR=address).post(LOGIN, {"username": username, "password": password}).status_code


@pytest.fixture
def staff(db):
    user = UserFactory(username="alice", is_staff=True)
    user.set_password(RIGHT)
    user.save()
    return user


@pytest.fixture
def signed_in_before(staff):
    assert attempt("alice", RIGHT) == 302
    return staff


def test_the_limits_are_the_documented_ones():
    assert (settings.AXES_FAILURE_LIMIT, settings.LOGIN_ADDRESS_FAILURE_LIMIT) == (LIMIT, 20)


def test_wrong_passwords_from_many_addresses_do_not_lock_the_owner_out(signed_in_before):
    for n in range(3 * LIMIT):  # an attacker spreading guesses over addresses, a few each
        assert attempt("alice", f"guess {n}", address=f"203.0.113.{n // 2}") in (200, 429)
    assert attempt("alice", RIGHT) == 302  # the owner, at her usual address (429 for 15 minutes before)
    assert attempt("alice", RIGHT, address="203.0.113.200") == 429  # the account stays closed to new addresses


def test_brute_force_from_one_address_is_stopped_even_from_a_known_one(signed_in_before):
    assert all(attempt("alice", "wrong") == 200 for _ in range(LIMIT - 1))  # the form again, with an error
    assert attempt("alice", "wrong") == 429  # the limit-th failure locks
    assert attempt("alice", RIGHT) == 429  # this account from this address, right password included
    assert attempt("alice", RIGHT, address="203.0.113.9") == 429  # and from addresses it never signed in from


def test_guessing_from_new_addresses_is_stopped_per_account(staff):
    for n in range(LIMIT):
        attempt("alice", "wrong", address=f"192.0.2.{n}")
    assert attempt("alice", RIGHT, address="192.0.2.99") == 429


def test_one_address_trying_many_accounts_is_locked(staff):
    for n in range(settings.LOGIN_ADDRESS_FAILURE_LIMIT):
        attempt(f"someone{n}", "guess", address="192.0.2.50")
    assert attempt("alice", RIGHT, address="192.0.2.50") == 429  # per address
    assert attempt("alice", RIGHT, address="192.0.2.51") == 302  # others still log in


def test_signing_in_to_ones_own_account_does_not_reset_the_addresss_count(staff):
    mallory = UserFactory(username="mallory")
    mallory.set_password("mallory's own")
    mallory.save()
    for n in range(settings.LOGIN_ADDRESS_FAILURE_LIMIT - 1):
        attempt(f"someone{n}", "guess", address="192.0.2.60")
    assert attempt("mallory", "mallory's own", address="192.0.2.60") == 302
    assert attempt("someone-else", "guess", address="192.0.2.60") == 429


def test_an_ipv6_client_is_counted_by_its_64(staff):
    for n in range(settings.LOGIN_ADDRESS_FAILURE_LIMIT):  # every guess from a new address of one /64
        attempt(f"someone{n}", "guess", address=f"2001:db8:1:2::{n + 1:x}")
    assert attempt("alice", RIGHT, address="2001:db8:1:2:ffff::1") == 429
    assert attempt("alice", RIGHT, address="2001:db8:1:3::1") == 302  # the next /64 is someone else


def test_a_locked_out_attempt_hashes_no_password(staff, monkeypatch):
    for _ in range(LIMIT):
        attempt("alice", "wrong")
    monkeypatch.setattr(
        "django.contrib.auth.base_user.check_password",
        lambda *args, **kwargs: pytest.fail("a locked-out login must not hash"),
    )
    assert attempt("alice", "wrong") == 429


def test_an_operator_unlocks_the_account(staff):
    for _ in range(LIMIT):
        attempt("alice", "wrong")
    assert attempt("alice", RIGHT) == 429
    call_command("axes_reset_username", "alice", stdout=StringIO())
    assert attempt("alice", RIGHT) == 302


def test_an_operator_unlocks_an_ipv6_64(staff):
    for n in range(settings.LOGIN_ADDRESS_FAILURE_LIMIT):
        attempt(f"someone{n}", "guess", address="2001:db8:1:2::1")
    assert attempt("alice", RIGHT, address="2001:db8:1:2::5") == 429
    call_command("axes_reset_ip", "2001:db8:1:2::", stdout=StringIO())
    assert attempt("alice", RIGHT, address="2001:db8:1:2::5") == 302


def test_a_success_before_the_limit_starts_the_count_again(staff):
    for _ in range(LIMIT - 1):
        attempt("alice", "wrong", address="198.51.100.8")
    assert attempt("alice", RIGHT, address="198.51.100.8") == 302
    assert all(attempt("alice", "wrong", address="198.51.100.8") == 200 for _ in range(LIMIT - 1))
