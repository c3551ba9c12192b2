"""Back-office logins: locked out per account and per address after a few failures, unlocked by an operator."""
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client

from tests.factories import UserFactory

LOGIN = "/admin/login/"
LIMIT = 5


def attempt(username: str, password: str, address: str = "198.51.100.7") -> int:
    return Client(REMOTE_ADDR=address).post(LOGIN, {"username": username, "password": password}).status_code


@pytest.fixture
def staff(db):
    user = UserFactory(username="alice", is_staff=True)
    user.set_password("right horse battery")
    user.save()
    return user


def test_the_account_is_locked_after_the_limit_even_for_the_right_password(staff):
    assert all(attempt("alice", "wrong") == 200 for _ in range(LIMIT - 1))  # the form again, with an error
    assert attempt("alice", "wrong") == 429  # the limit-th failure locks
    assert attempt("alice", "right horse battery") == 429
    assert attempt("alice", "right horse battery", address="203.0.113.9") == 429  # from anywhere: per account


def test_one_address_trying_many_accounts_is_locked(staff):
    for n in range(LIMIT):
        attempt(f"someone{n}", "guess", address="192.0.2.50")
    assert attempt("alice", "right horse battery", address="192.0.2.50") == 429  # per address
    assert attempt("alice", "right horse battery", address="192.0.2.51") == 302  # others still log in


def test_a_locked_out_attempt_hashes_no_password(staff, monkeypatch):
    for _ in range(LIMIT):
        attempt("alice", "wrong")
    monkeypatch.setattr("django.contrib.auth.base_user.check_password",
                        lambda *args, **kwargs: pytest.fail("a locked-out login must not hash"))
    assert attempt("alice", "wrong") == 429


def test_an_operator_unlocks_the_account(staff):
    for _ in range(LIMIT):
        attempt("alice", "wrong")
    assert attempt("alice", "right horse battery") == 429
    call_command("axes_reset_username", "alice", stdout=StringIO())
    call_command("axes_reset_ip", "198.51.100.7", stdout=StringIO())
    assert attempt("alice", "right horse battery") == 302


def test_a_success_before_the_limit_starts_the_count_again(staff):
    for _ in range(LIMIT - 1):
        attempt("alice", "wrong", address="198.51.100.8")
    assert attempt("alice", "right horse battery", address="198.51.100.8") == 302
    assert all(attempt("alice", "wrong", address="198.51.100.8") == 200 for _ in range(LIMIT - 1))
