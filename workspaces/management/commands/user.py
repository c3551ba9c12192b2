"""`manage.py user create USERNAME --email E [--password-stdin]`: an account, for `workspace create --owner`."""

import getpass
import sys

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import CommandError
from django.core.validators import validate_email
from django.db import IntegrityError, transaction

from lftrack.cli import JsonCommand


class Command(JsonCommand):
    help = "Manage user accounts."

    def add_actions(self, sub) -> None:
        create = sub.add_parser("create", help="Create an account; its password is asked for, never an argument.")
        create.add_argument("username")
        create.add_argument("--email", required=True)
        create.add_argument("--password-stdin", action="store_true", help="read the password from standard input")

    def do_create(self, *, username: str, email: str, password_stdin: bool, **_) -> dict:
        try:
            validate_email(email)
        except ValidationError:
            raise CommandError(f"invalid email: {email}") from None
        password = self._password(password_stdin)
        user_model = get_user_model()
        try:
            validate_password(password, user_model(username=username, email=email))
        except ValidationError as error:
            raise CommandError(" ".join(error.messages)) from None
        try:
            with transaction.atomic():
                user = user_model.objects.create_user(username=username, email=email, password=password)
        except IntegrityError:
            raise CommandError(f"user already exists: {username}") from None
        return {"id": user.pk, "username": user.get_username()}

    def _password(self, from_stdin: bool) -> str:
        if from_stdin:
            return sys.stdin.readline().rstrip("\n")
        if not sys.stdin.isatty():
            raise CommandError("a password is required: type it at a terminal, or pass --password-stdin")
        password = getpass.getpass("Password: ")
        if password != getpass.getpass("Password (again): "):
            raise CommandError("the two passwords differ")
        return password
