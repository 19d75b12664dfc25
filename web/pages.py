"""What every account holder's page shares: who is signed in, and how a refused input is answered.

The people's pages (web.views) and the owners' pages (web.owners) both stand on it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import QuerySet
from django.http import Http404, HttpRequest

from accounts.models import Membership, Organisation, User
from memories import scopes
from memories.selectors import viewer_for


class RefusedInputIs400:
    """A form that refuses its input answers 400, like every other refusal here, not 200."""

    def form_invalid(self, form):
        return self.render_to_response(self.get_context_data(form=form), status=400)


@dataclass(frozen=True)
class Account:
    """The signed-in person, their organisation, and the rules' view of them."""

    user: User
    organisation: Organisation
    viewer: scopes.Viewer


def account_of(request: HttpRequest) -> Account:
    user = cast(User, request.user)  # the pages are login_required
    membership = Membership.objects.select_related("organisation").filter(user=user).first()
    if membership is None:
        raise PermissionDenied("This account belongs to no organisation.")
    viewer = viewer_for(user=user, organisation=membership.organisation, role=membership.role)
    return Account(user=user, organisation=membership.organisation, viewer=viewer)


def one_or_404(rows: QuerySet, missing: str):
    """The first row, or a 404 saying `missing`: `rows` is already narrowed to what this person may see."""
    row = rows.first()
    if row is None:
        raise Http404(missing)
    return row


def errors_onto(form, error: ValidationError, *, default_field: str) -> None:
    """A service's refusal, shown on the field it names (or on the form)."""
    if hasattr(error, "error_dict"):
        for name, messages_ in error.message_dict.items():
            form.add_error(name if name in form.fields else None, messages_)
    else:
        form.add_error(default_field, error.messages)
