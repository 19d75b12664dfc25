"""Forms for the account holders' pages. Each names its field and its limit when it refuses input."""

from __future__ import annotations

from django import forms
from django.contrib.auth.forms import AuthenticationForm

from accounts.models import HANDLE_MAX_CHARS
from accounts.people import DIRECTORY_USERNAME_PREFIX, DISPLAY_NAME_MAX_CHARS, handle_problem
from accounts.roles import OWNER_GRANTS
from accounts.tokens import AGENT_NAME_MAX_CHARS, MAX_LISTED_CHANNELS, MAX_LISTED_PEOPLE
from memories.models import BODY_MAX_CHARS, Bucket, Channel, Scope, Tier
from memories.places import MAX_PEOPLE_IN_PLACE, channel_problem

SEARCH_MAX_CHARS = 200
REASON_MAX_CHARS = 500
# Typed to confirm erasing everything about oneself: a word, not a checkbox,
# so it cannot be done by a stray click or a remembered form.
ERASE_WORD = "erase"


class ExactTextField(forms.CharField):
    """Ids, handles and typed confirmations, taken letter for letter: the browser
    neither suggests earlier entries nor marks them as misspelt."""

    widget = forms.TextInput(attrs={"autocomplete": "off", "spellcheck": "false"})


class NameListField(forms.CharField):
    """Optional: several ids or handles in a box `rows` lines high, taken letter for letter like ExactTextField."""

    def __init__(self, *, rows: int, **options):
        widget = forms.Textarea(attrs={"rows": rows, "spellcheck": "false"})
        super().__init__(required=False, widget=widget, **options)


class LoginForm(AuthenticationForm):
    username = forms.CharField(
        max_length=150, widget=forms.TextInput(attrs={"autofocus": True, "autocomplete": "username"})
    )


def _choices(label: str, choices) -> list[tuple[str, str]]:
    return [("", label), *choices]


class MemoryFilterForm(forms.Form):
    """Search and filters for "My memories". Every field is optional; bad values are refused by name."""

    class Mode:
        WORDS = "words"
        MEANING = "meaning"

    class Expiry:
        LIVE = ""
        EXPIRED = "expired"
        ALL = "all"

    q = forms.CharField(
        label="Search",
        required=False,
        max_length=SEARCH_MAX_CHARS,
        widget=forms.TextInput(attrs={"type": "search", "placeholder": "Words from a memory"}),
    )
    mode = forms.ChoiceField(
        label="Match",
        required=False,
        choices=[(Mode.WORDS, "Matching words"), (Mode.MEANING, "Similar meaning")],
    )
    bucket = forms.ChoiceField(
        label="Kind",
        required=False,
        choices=_choices("Any kind", [(Bucket.USER, "Saved by a person"), (Bucket.LEARNED, "Learned from threads")]),
    )
    scope = forms.ChoiceField(label="Who it is for", required=False, choices=_choices("Any scope", Scope.choices))
    tier = forms.ChoiceField(label="Tier", required=False, choices=_choices("Any tier", Tier.choices))
    pinned = forms.ChoiceField(
        label="Pinned", required=False, choices=[("", "Pinned or not"), ("yes", "Pinned only"), ("no", "Not pinned")]
    )
    expired = forms.ChoiceField(
        label="Expiry",
        required=False,
        choices=[(Expiry.LIVE, "Not expired"), (Expiry.EXPIRED, "Expired only"), (Expiry.ALL, "Expired or not")],
    )

    def clean_q(self) -> str:
        return " ".join(self.cleaned_data["q"].split())

    def clean_mode(self) -> str:
        return self.cleaned_data["mode"] or self.Mode.WORDS


class CorrectForm(forms.Form):
    body = forms.CharField(
        label="The corrected memory",
        max_length=BODY_MAX_CHARS,
        widget=forms.Textarea(attrs={"rows": 6}),
        help_text=f"Up to {BODY_MAX_CHARS:,} characters. The old version is kept in the memory's history.",
    )

    def __init__(self, *args, old_body: str = "", **kwargs):
        super().__init__(*args, **kwargs)
        self.old_body = old_body

    def clean_body(self) -> str:
        body = self.cleaned_data["body"]
        if body == self.old_body:
            raise forms.ValidationError("The correction is the same as the memory; change something or go back.")
        return body


class ForgetForm(forms.Form):
    reason = forms.CharField(
        label="Why it should be forgotten",
        max_length=REASON_MAX_CHARS,
        initial="I asked for it to be forgotten.",
        widget=forms.TextInput(),
        help_text="Kept on the receipt, which is all that remains of the memory.",
    )


class EraseEverythingForm(forms.Form):
    confirm = ExactTextField(
        label=f'Type "{ERASE_WORD}" to confirm',
        max_length=50,
    )

    def clean_confirm(self) -> str:
        typed = self.cleaned_data["confirm"].strip()
        if typed.lower() != ERASE_WORD:
            raise forms.ValidationError(f'Type the word "{ERASE_WORD}" to confirm; nothing was erased.')
        return typed


# --- The owners' pages ----------------------------------------------------------------------------

PEOPLE_FIELD_MAX_CHARS = 20_000
CHANNELS_FIELD_MAX_CHARS = 45_000


def names_in(text: str, *, most: int, what: str) -> list[str]:
    """Handles and usernames typed one per line or separated by spaces or commas (neither holds either),
    each once; refused when there are more than `most` ("A place names at most 500 people.")."""
    names = list(dict.fromkeys(name for name in text.replace(",", " ").split() if name))
    if len(names) > most:
        raise forms.ValidationError(f"{what} at most {most} people.")
    return names


class PersonForm(forms.Form):
    handle = ExactTextField(
        label="Handle",
        max_length=HANDLE_MAX_CHARS,
        help_text=(
            f"Up to {HANDLE_MAX_CHARS} letters, digits and . _ : @ -, such as a chat platform's user id. "
            "Adding a handle that exists updates that person's display name."
        ),
    )
    display_name = forms.CharField(
        label="Display name", max_length=DISPLAY_NAME_MAX_CHARS, required=False, help_text="How people know them."
    )

    def clean_handle(self) -> str:
        handle = self.cleaned_data["handle"].strip()
        problem = handle_problem(handle)
        if problem:
            raise forms.ValidationError(problem)
        return handle


class InviteForm(forms.Form):
    username = ExactTextField(
        label="Username they will sign in with",
        max_length=150,
        help_text="Letters, digits and @ . + - _ only, up to 150 characters; unique within your organisation.",
    )

    def clean_username(self) -> str:
        username = self.cleaned_data["username"].strip()
        if username.startswith(DIRECTORY_USERNAME_PREFIX):
            raise forms.ValidationError(f"A username cannot start with {DIRECTORY_USERNAME_PREFIX!r}.")
        return username


class RemoveForm(forms.Form):
    confirm = forms.BooleanField(
        label="Yes, remove this person: they can no longer sign in, and agents stop naming them in new places",
    )


class RoleForm(forms.Form):
    """An owner makes a person an owner or a member; steward is an operator's to give (accounts.roles)."""

    role = forms.ChoiceField(
        label="Role",
        choices=[(role.value, role.label) for role in OWNER_GRANTS],
        help_text="Owners manage people, places and agents; members keep their own memories.",
    )


def _kind_choices():
    return Channel.Kind.choices


class PlaceForm(forms.Form):
    """A place's kind and its whole membership; `channel` only when recording a new place."""

    channel = ExactTextField(
        label="Channel id",
        max_length=200,
        help_text="The chat platform's id for it: 1 to 200 printable characters, no slash.",
    )
    kind = forms.ChoiceField(label="Kind", choices=_kind_choices)
    people = NameListField(
        label="People in it",
        rows=4,
        max_length=PEOPLE_FIELD_MAX_CHARS,
        help_text=(
            f"Handles or usernames, separated by spaces, commas or new lines; at most {MAX_PEOPLE_IN_PLACE}. "
            "A DM is with exactly one person. Everyone in the organisation may read a public channel."
        ),
    )

    def __init__(self, *args, new: bool = True, **kwargs):
        super().__init__(*args, **kwargs)
        if not new:
            del self.fields["channel"]

    def clean_channel(self) -> str:
        channel = self.cleaned_data["channel"]
        problem = channel_problem(channel)
        if problem:
            raise forms.ValidationError(problem)
        return channel

    def clean_people(self) -> list[str]:
        return names_in(self.cleaned_data["people"], most=MAX_PEOPLE_IN_PLACE, what="A place names")


class AgentForm(forms.Form):
    name = forms.CharField(
        label="Agent's name",
        max_length=AGENT_NAME_MAX_CHARS,
        help_text=f"Up to {AGENT_NAME_MAX_CHARS} characters, unique within your organisation.",
    )


class RestrictForm(forms.Form):
    restricted = forms.BooleanField(label="Restrict this token to the channels and DMs listed below", required=False)
    channels = NameListField(
        label="Channels (external ids, one per line)",
        rows=4,
        max_length=CHANNELS_FIELD_MAX_CHARS,
        help_text=f"At most {MAX_LISTED_CHANNELS}. A channel need not be recorded yet.",
    )
    people = NameListField(
        label="DMs with these people (handles or usernames)",
        rows=3,
        max_length=PEOPLE_FIELD_MAX_CHARS,
        help_text=f"Separated by spaces, commas or new lines; at most {MAX_LISTED_PEOPLE}.",
    )

    def clean_channels(self) -> list[str]:
        channels = list(dict.fromkeys(line.strip() for line in self.cleaned_data["channels"].splitlines()))
        channels = [channel for channel in channels if channel]
        for channel in channels:
            problem = channel_problem(channel)
            if problem:
                raise forms.ValidationError(f"{channel[:40]!r}: {problem}")
        if len(channels) > MAX_LISTED_CHANNELS:
            raise forms.ValidationError(f"A token lists at most {MAX_LISTED_CHANNELS} channels.")
        return channels

    def clean_people(self) -> list[str]:
        return names_in(self.cleaned_data["people"], most=MAX_LISTED_PEOPLE, what="A token lists")

    def clean(self):
        data = super().clean()
        if data.get("restricted") and not data.get("channels") and not data.get("people"):
            raise forms.ValidationError(
                "A restricted token with no channels and no people can act nowhere; list some, or revoke it."
            )
        return data
