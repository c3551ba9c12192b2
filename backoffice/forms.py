"""Forms of the back office: rows chosen from one workspace, a choice of the user's workspaces, and create forms
that act once (a one-time nonce per form shown)."""

import logging
import secrets

from django import forms
from django.core.cache import cache
from django.db import models
from django.http import HttpRequest

from workspaces.models import Workspace

# The one-time nonces of the create forms shown to a session (the last ten).
FORM_NONCES = "lftrack_form_nonces"
logger = logging.getLogger("lftrack.backoffice")


class WorkspaceModelForm(forms.ModelForm):
    """Every chosen related row must live in the same workspace as the row being saved."""

    def clean(self):
        data = super().clean()
        workspace = data.get("workspace") if "workspace" in self.fields else None
        workspace_id = workspace.pk if workspace else getattr(self.instance, "workspace_id", None)
        if workspace_id is None:
            return data
        for name, value in data.items():
            if (
                isinstance(value, models.Model)
                and not isinstance(value, Workspace)
                and getattr(value, "workspace_id", workspace_id) != workspace_id
            ):
                self.add_error(name, "Choose one from the same workspace.")
        return data


def form_nonce_issue(request: HttpRequest) -> str:
    """A nonce for a create form shown now; the session keeps it until the form comes back."""
    nonce = secrets.token_urlsafe(16)
    request.session[FORM_NONCES] = [*request.session.get(FORM_NONCES, [])[-9:], nonce]
    return nonce


def form_nonce_use(request: HttpRequest, nonce: str) -> bool:
    """True the first time a nonce this session was given comes back, False after: a reload of the page
    that answered the POST, or a second click. The session forgets it for reloads; a double click sends
    both POSTs before either saved the session, so Redis's SET NX settles which one acts."""
    nonces = request.session.get(FORM_NONCES, [])
    if nonce not in nonces:
        return False
    nonces.remove(nonce)
    request.session[FORM_NONCES] = nonces
    try:
        return cache.add(f"form-nonce:{nonce}", 1, timeout=24 * 3600)
    except Exception as exc:  # Redis gone: the session alone still stops a reload
        logger.warning("form nonce not claimed in the cache", extra={"error": type(exc).__name__})
        return True


class OnceForm(forms.Form):
    """A create form that acts once (its answer shows a secret, or a second one would do harm): ServiceFormAdmin
    gives it a nonce and refuses the nonce a second time."""

    nonce = forms.CharField(widget=forms.HiddenInput, max_length=64)


class WorkspaceChoiceForm(forms.Form):
    """A form for a write in one of the user's workspaces; the choice is hidden when there is only one."""

    workspace = forms.ModelChoiceField(queryset=Workspace.objects.none(), empty_label=None)

    def __init__(self, *args, workspaces, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["workspace"].queryset = workspaces
        if len(workspaces) == 1:
            self.fields["workspace"].widget = forms.HiddenInput()
            self.fields["workspace"].initial = workspaces[0].pk
