"""How a page names a person it holds an id of: "you", or their name from the page's `names`."""

from django import template

register = template.Library()


@register.simple_tag(takes_context=True)
def person_name(context, person_id, fallback: str = "") -> str:
    """ "you" for the signed-in person; else their name in the context's `names` (person id -> display
    name, from `accounts.people.people_display_names`), else `fallback`."""
    user = context.get("user")
    if user is not None and str(getattr(user, "pk", "")) == str(person_id):
        return "you"
    return context.get("names", {}).get(str(person_id)) or fallback


@register.filter
def actor_in_words(label: str) -> str:
    """A receipt's stored actor ("user:mona", "agent:helper", "system") as a sentence names it."""
    kind, _, name = (label or "").partition(":")
    if kind == "agent" and name:
        return f"the agent {name}"
    if kind == "user" and name:
        return name
    return "Archivist itself" if label == "system" else label
