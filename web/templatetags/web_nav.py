"""What the page navigation offers the signed-in person: the owners' pages only to owners."""

from django import template

from accounts.models import Membership

register = template.Library()


@register.simple_tag(takes_context=True)
def is_owner(context) -> bool:
    """Whether the signed-in person owns their organisation (one query, once per page)."""
    request = context.get("request")
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return False
    if not hasattr(request, "_web_is_owner"):
        request._web_is_owner = Membership.objects.filter(user=user, role=Membership.Role.OWNER).exists()
    return request._web_is_owner
