"""Forms for the account holders' pages. Each names its field and its limit when it refuses input."""

from __future__ import annotations

from django import forms
from django.contrib.auth.forms import AuthenticationForm

from memories.models import BODY_MAX_CHARS, Bucket, Scope, Tier

SEARCH_MAX_CHARS = 200
REASON_MAX_CHARS = 500
# Typed to confirm erasing everything about oneself: a word, not a checkbox,
# so it cannot be done by a stray click or a remembered form.
ERASE_WORD = "erase"


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
    confirm = forms.CharField(
        label=f'Type "{ERASE_WORD}" to confirm',
        max_length=50,
        widget=forms.TextInput(attrs={"autocomplete": "off", "spellcheck": "false"}),
    )

    def clean_confirm(self) -> str:
        typed = self.cleaned_data["confirm"].strip()
        if typed.lower() != ERASE_WORD:
            raise forms.ValidationError(f'Type the word "{ERASE_WORD}" to confirm; nothing was erased.')
        return typed
