"""Contact tags: labels a workspace puts on its contacts, added and removed here whatever the way in (back office, CSV, API)."""

import re

from django.db import IntegrityError, transaction

from customers.models import ContactTag, Customer
from lftrack.errors import Unprocessable

MAX_TAGS = 50  # per contact (docs/security.md, "Tags, segments and broadcasts")
MAX_TAG_LENGTH = 50
# Letters, digits and a few separators: a tag is a word a marketer types, never markup, and a comma
# separates tags in the back office's field and in a CSV cell.
_TAG_RE = re.compile(r"^[\w][\w .:/+&-]*$")


def tags_clean(names: list[str]) -> list[str]:
    """The tags as stored: stripped, lower-cased, each once, in the order given. Raises Unprocessable for an
    empty, too long or ill-formed one."""
    cleaned: list[str] = []
    for raw in names:
        if not isinstance(raw, str):
            raise Unprocessable("tags must be strings")
        name = " ".join(raw.split()).lower()
        if not name:
            raise Unprocessable("tag is empty")
        if len(name) > MAX_TAG_LENGTH:
            raise Unprocessable("tag is too long")
        if not _TAG_RE.match(name):
            raise Unprocessable("tag has characters other than letters, digits, spaces and . : / + & -")
        if name not in cleaned:
            cleaned.append(name)
    return cleaned


def tags_parse(text: str) -> list[str]:
    """A comma-separated list (the back office's field, a CSV cell), cleaned."""
    return tags_clean([part for part in text.split(",") if part.strip()])


def contact_tags(customer: Customer) -> list[str]:
    return sorted(ContactTag.objects.filter(customer=customer).values_list("name", flat=True))


@transaction.atomic
def contact_tags_add(*, customer: Customer, names: list[str]) -> list[str]:
    """Add tags (those it has already are kept as they are); the contact's tags after. Over MAX_TAGS in all
    raises Unprocessable and changes nothing.

    The contact's row is locked first, so two additions at once count each other's tags against the bound.
    """
    names = tags_clean(names)
    Customer.objects.select_for_update().filter(pk=customer.pk).values_list("pk").first()
    current = set(ContactTag.objects.filter(customer=customer).values_list("name", flat=True))
    new = [name for name in names if name not in current]
    if len(current) + len(new) > MAX_TAGS:
        raise Unprocessable(f"a contact has at most {MAX_TAGS} tags")
    try:
        with transaction.atomic():
            ContactTag.objects.bulk_create(
                [ContactTag(workspace_id=customer.workspace_id, customer=customer, name=name) for name in new]
            )
    except IntegrityError:  # written meanwhile by a request that did not lock (none should); the tag is there
        pass
    return sorted(current | set(new))


@transaction.atomic
def contact_tags_remove(*, customer: Customer, names: list[str]) -> list[str]:
    """Remove tags (one it does not have is not an error); the contact's tags after."""
    ContactTag.objects.filter(customer=customer, name__in=tags_clean(names)).delete()
    return contact_tags(customer)


@transaction.atomic
def contact_tags_set(*, customer: Customer, names: list[str]) -> list[str]:
    """Exactly these tags (the back office's field): the others are removed."""
    names = tags_clean(names)
    if len(names) > MAX_TAGS:
        raise Unprocessable(f"a contact has at most {MAX_TAGS} tags")
    ContactTag.objects.filter(customer=customer).exclude(name__in=names).delete()
    return contact_tags_add(customer=customer, names=names)
