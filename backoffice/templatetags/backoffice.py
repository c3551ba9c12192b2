"""Template filters of the back office's own templates."""

from django import template
from django.db.models.options import Options

from backoffice.labels import plural_label as _plural_label

register = template.Library()


@register.filter
def plural_label(opts: Options) -> str:
    """A list page's name as the sidebar gives it: "Recipients", not "Enrollments"."""
    return _plural_label(opts)
