"""Forms for the stewards' admin: a reason for every decision, and the promote-to-stance choice."""

from __future__ import annotations

from django import forms

from admissions.models import REASON_MAX_CHARS, STANCE_BODY_MAX_CHARS, STANCE_ID_MAX_CHARS, Stance


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
        required=False, max_length=STANCE_BODY_MAX_CHARS, label="New stance body", widget=forms.Textarea
    )

    def clean(self):
        data = super().clean()
        creating = any(data.get(name) for name in ("new_id", "new_title", "new_body"))
        if data.get("stance") and creating:
            raise forms.ValidationError("Pick an existing stance or describe a new one, not both.")
        if not data.get("stance") and not creating:
            raise forms.ValidationError("Pick an existing stance or describe a new one.")
        if creating:
            for name in ("new_id", "new_title", "new_body"):
                if not data.get(name):
                    self.add_error(name, "A new stance needs an id, a title and a body.")
        return data
