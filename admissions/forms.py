"""Forms for the stewards' admin: a reason for every decision, and the promote-to-stance choice."""

from __future__ import annotations

from django import forms

from admissions.models import REASON_MAX_CHARS, STANCE_BODY_MAX_CHARS, STANCE_ID_MAX_CHARS, Stance
from memories.models import BODY_MAX_CHARS


class ReasonForm(forms.Form):
    reason = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4, "cols": 80}),
        max_length=REASON_MAX_CHARS,
        strip=True,
        help_text="Required. It is kept with the decision for good and shown in the claim's history.",
    )


class PromoteForm(ReasonForm):
    """Pick an existing stance, or describe a new one; exactly one of the two."""

    stance = forms.ModelChoiceField(
        queryset=Stance.objects.order_by("id"), required=False, help_text="An existing reviewed stance."
    )
    new_id = forms.CharField(
        required=False,
        max_length=STANCE_ID_MAX_CHARS,
        label="New stance id",
        help_text="Lowercase words joined by hyphens, such as uk-interest-rates.",
    )
    new_title = forms.CharField(required=False, max_length=200, label="New stance title")
    new_body = forms.CharField(
        required=False,
        max_length=STANCE_BODY_MAX_CHARS,
        label="About the new stance",
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="For stewards; the claim's text when left empty. Agents are shown the claim's text.",
    )

    def clean(self):
        data = super().clean()
        creating = any(data.get(name) for name in ("new_id", "new_title", "new_body"))
        if data.get("stance") and creating:
            raise forms.ValidationError("Pick an existing stance or describe a new one, not both.")
        if not data.get("stance") and not creating:
            raise forms.ValidationError("Pick an existing stance or describe a new one.")
        if creating:
            for name in ("new_id", "new_title"):
                if not data.get(name):
                    self.add_error(name, "A new stance needs an id and a title.")
        return data


class ReviseForm(ReasonForm):
    """New text for a live stance: the one thing a revision writes."""

    text = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4, "cols": 80}),
        max_length=BODY_MAX_CHARS,
        strip=True,
        label="New text",
        help_text="What agents are shown from now on. The evidence and sources carry over.",
    )
