"""`manage.py customer erase WORKSPACE ID [--test]` and `manage.py customer export WORKSPACE ID [--test]`
(docs/privacy.md)."""

from django.core.management.base import CommandError

from customers.erasure import customer_erase, customer_export
from customers.models import Customer
from customers.selectors import customer_by_reference
from lftrack.cli import JsonCommand
from workspaces.cli import workspace_from_arg


class Command(JsonCommand):
    help = "Erase a contact (GDPR article 17) or export everything known of them (article 15)."

    def add_actions(self, sub) -> None:
        for action, text in [
            ("erase", "Erase the contact: their personal data goes, their numbers stay; cannot be undone."),
            ("export", "Print everything known of the contact as one JSON object."),
        ]:
            parser = sub.add_parser(action, help=text)
            parser.add_argument("workspace")
            parser.add_argument("id", help="the contact's id, or ext_<external_id>")
            parser.add_argument("--test", action="store_true", help="a test contact (made by a test token)")

    def _customer(self, workspace: str, reference: str, test: bool) -> Customer:
        found = customer_by_reference(workspace_id=workspace_from_arg(workspace).pk, reference=reference, test=test)
        if found is None:
            raise CommandError(f"unknown customer: {reference}")
        return found

    def do_erase(self, *, workspace: str, id: str, test: bool, **_) -> dict:
        return customer_erase(customer=self._customer(workspace, id, test))

    def do_export(self, *, workspace: str, id: str, test: bool, **_) -> dict:
        return customer_export(customer=self._customer(workspace, id, test))
