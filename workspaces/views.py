"""The page behind an invitation's link: accept it signed in, or make an account for it first."""

from django.contrib.auth import login
from django.contrib.auth.forms import UserCreationForm
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from lftrack.errors import ServiceError
from workspaces.invitations import invitation_accept, invitation_from_token

_TEMPLATE = "workspaces/invitation.html"


@never_cache
@require_http_methods(["GET", "POST"])
def invitation(request: HttpRequest, token: str) -> HttpResponse:
    try:
        invited = invitation_from_token(token)
    except ServiceError:
        return render(request, _TEMPLATE, {"state": "invalid"}, status=400)
    signup = UserCreationForm(request.POST if request.method == "POST" and "signup" in request.POST else None)
    if request.method == "POST":
        if request.user.is_authenticated and "accept" in request.POST:
            user = request.user
        elif "signup" in request.POST and signup.is_valid():
            user = signup.save(commit=False)
            user.email = invited.email  # the address the invitation went to: the person proved they read it
            user.save()
            login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        else:
            return render(request, _TEMPLATE, {"state": "ask", "invitation": invited, "signup": signup}, status=200)
        try:
            invitation_accept(invitation=invited, user=user)
        except ServiceError:
            return render(request, _TEMPLATE, {"state": "invalid"}, status=400)
        return HttpResponseRedirect("/admin/")
    return render(request, _TEMPLATE, {"state": "ask", "invitation": invited, "signup": signup})
