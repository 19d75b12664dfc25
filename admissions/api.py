"""The system-claims API: submit a claim, read one back with its derived status and history.

Who may submit: every agent (Bearer token), and account holders who hold the
Django permission `admissions.submit_claim` (stewards hold it through the
Stewards group; anyone else is granted it by an administrator).
"""

from __future__ import annotations

from datetime import date

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.response import Response

from accounts.auth import Principal
from admissions.labels import UNNAMED_STEWARD, claimant_label, steward_label
from admissions.selectors import claim_history, claim_visible_to
from admissions.services import claim_submit
from lib.api.docs import answered, asked, read_schema, write_schema
from lib.api.idempotency import idempotent_response
from lib.api.views import ApiView
from lib.fields import ID_FORBIDDEN, StrictDateField, optional_text
from lib.text import invisible_problem
from memories.api.serializers import StrictSerializer
from memories.models import (
    BODY_MAX_CHARS,
    EVIDENCE_KINDS,
    SLUG_MAX_CHARS,
    SLUG_PREFIX,
    SOURCE_REF_MAX_CHARS,
    ClaimedAdmission,
    Transparency,
    evidence_problems,
)

# A ref is an id or address: not blank, no control or invisible character (the schema's half of the rule).
EVIDENCE_REF_PATTERN = rf"^[^\S{ID_FORBIDDEN}]*[^\s{ID_FORBIDDEN}][^{ID_FORBIDDEN}]*$"
# What validate_slug checks, for the schema: the prefix, then something visible after it.
SLUG_PATTERN = rf"^[^\S{ID_FORBIDDEN}]*{SLUG_PREFIX}[^\S{ID_FORBIDDEN}]*[^\s{ID_FORBIDDEN}][^{ID_FORBIDDEN}]*$"

SUBMIT_PERMISSION = "admissions.submit_claim"


@extend_schema_field(
    {
        "type": "array",
        "minItems": 1,
        "items": {
            "type": "object",
            "required": ["kind", "ref"],
            "additionalProperties": False,
            "properties": {
                "kind": {"type": "string", "enum": list(EVIDENCE_KINDS)},
                "ref": {"type": "string", "minLength": 1, "maxLength": 500, "pattern": EVIDENCE_REF_PATTERN},
            },
        },
        "example": [{"kind": "url", "ref": "https://bank.example/rates"}],
    }
)
class EvidenceRefsField(serializers.JSONField):
    """At least one `{kind, ref}`; validated item by item by `evidence_problems` (the database's rule)."""


class ClaimInputSerializer(StrictSerializer):
    identifier_fields = ("slug", "entity", "source_ref")
    unknown_field_message = "This field is not part of a claim."

    body = serializers.CharField(max_length=BODY_MAX_CHARS, help_text="The claim, as one statement.")
    slug = serializers.RegexField(
        SLUG_PATTERN,
        max_length=SLUG_MAX_CHARS,
        help_text=f"Starts with {SLUG_PREFIX!r} and names something after it.",
        error_messages={"invalid": f"The slug must start with {SLUG_PREFIX!r} and name something after it."},
    )
    entity = serializers.CharField(max_length=200, help_text="What the claim is about.")
    transparency = serializers.ChoiceField(choices=Transparency.choices)
    as_of = StrictDateField(help_text="The day the claim is true as of; not in the future.")
    evidence_refs = EvidenceRefsField(help_text="At least one {kind, ref}; kinds: url, document, message, ...")
    admission = serializers.ChoiceField(
        choices=ClaimedAdmission.choices,
        required=False,
        default=ClaimedAdmission.CANDIDATE,
        help_text="What you claim. Stored, shown, and never counted: only a steward's record decides.",
    )
    source_ref = optional_text(SOURCE_REF_MAX_CHARS)
    source_label = optional_text(200)

    def validate_slug(self, value: str) -> str:
        value = value.strip()
        if not value.startswith(SLUG_PREFIX) or value == SLUG_PREFIX:
            raise serializers.ValidationError(f"The slug must start with {SLUG_PREFIX!r} and name something after it.")
        return value

    def validate_as_of(self, value: date) -> date:
        if value > date.today():
            raise serializers.ValidationError("as_of is in the future; a claim is true as of a day that has come.")
        return value

    def validate_evidence_refs(self, value):
        problems = evidence_problems(value)
        if not problems:
            for index, item in enumerate(value):
                problem = invisible_problem(item["ref"])
                if problem:
                    problems.append(f"Item {index}'s ref: {problem}")
        if problems:
            raise serializers.ValidationError(problems)
        return value


class RecordOutputSerializer(serializers.Serializer):
    decision = serializers.CharField()
    reason = serializers.CharField()
    at = serializers.DateTimeField()
    steward = serializers.CharField(
        help_text=(
            "'steward <display name>' to stewards and to the claim's own organisation; "
            "other organisations see only 'steward'."
        )
    )
    stance = serializers.CharField(allow_null=True)


class ClaimOutputSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    body = serializers.CharField()
    slug = serializers.CharField(help_text="The claim's `sys:` slug.")
    entity = serializers.CharField(allow_null=True)
    transparency = serializers.CharField(help_text="Its transparency tier.")
    as_of = serializers.DateField(help_text="The date the claim is true as of.")
    evidence_refs = serializers.JSONField()
    status = serializers.CharField(help_text="Derived from steward records: candidate, challenged, admitted, ...")
    claimed_admission = serializers.CharField(help_text="What the author claimed; it never counts.")
    stance = serializers.CharField(allow_null=True, help_text="Set on a promotion tombstone.")
    superseded_by = serializers.UUIDField(allow_null=True)
    erased = serializers.BooleanField()
    created_at = serializers.DateTimeField()
    organisation = serializers.CharField(allow_null=True, help_text="Shown to the claim's organisation and stewards.")
    author = serializers.CharField(
        allow_null=True,
        help_text="'agent <name>' or 'person <username>'; shown to the claim's organisation and stewards.",
    )
    promoted_to = serializers.CharField(allow_null=True, help_text="The stance this claim was promoted to, if any.")
    history = RecordOutputSerializer(many=True)


def claim_output(claim, principal: Principal) -> dict:
    insider = principal.is_steward or claim.organisation_id == principal.organisation.pk
    superseded_by = claim.superseded_by if claim.superseded_by_id else None
    return {
        "id": claim.pk,
        "body": claim.body,
        "slug": claim.slug,
        "entity": claim.entity,
        "transparency": claim.transparency,
        "as_of": claim.as_of,
        "evidence_refs": claim.evidence_refs,
        "status": claim.derived_status,
        "claimed_admission": claim.admission,
        "stance": claim.stance,
        "superseded_by": claim.superseded_by_id,
        "erased": claim.redacted_at is not None,
        "created_at": claim.created_at,
        "organisation": claim.organisation.slug if insider else None,
        "author": claimant_label(claim) if insider else None,
        "promoted_to": superseded_by.stance if superseded_by is not None else None,
        "history": [
            {
                "decision": record.decision,
                "reason": record.reason,
                "at": record.at,
                "steward": steward_label(record.steward) if insider else UNNAMED_STEWARD,
                "stance": record.stance_id,
            }
            for record in claim_history(claim=claim)
        ],
    }


CLAIM_EXAMPLE = {
    "body": "The Bank of England base rate is 4.75%",
    "slug": "sys:boe-base-rate",
    "entity": "bank-of-england",
    "transparency": "ledger",
    "as_of": "2026-11-01",
    "evidence_refs": [{"kind": "url", "ref": "https://www.bankofengland.co.uk/monetary-policy"}],
}


class SystemClaimListApi(ApiView):
    @write_schema(
        operation_id="system_claims_submit",
        description=(
            "A network-wide claim, stored as a candidate until a steward admits it. Agents may submit; "
            f"account holders need the `{SUBMIT_PERMISSION}` permission. Each refused rule is answered "
            "with its field and the reason."
        ),
        request=ClaimInputSerializer,
        responses={201: ClaimOutputSerializer},
        examples=[asked("A claim with one piece of evidence", CLAIM_EXAMPLE)],
        tags=["system claims"],
    )
    def post(self, request):
        """Submit a system claim."""
        principal = self.principal()
        if not principal.is_agent and not request.user.has_perm(SUBMIT_PERMISSION):
            raise PermissionDenied(f"Submitting system claims needs the {SUBMIT_PERMISSION} permission.")
        claim_fields = self.validated(ClaimInputSerializer)

        def answer(claim_id) -> Response:
            row = claim_visible_to(principal=principal, claim_id=claim_id)
            return Response(ClaimOutputSerializer(claim_output(row, principal)).data, status=status.HTTP_201_CREATED)

        def write():
            claim = claim_submit(
                organisation=principal.organisation,
                agent=principal.agent,
                user=None if principal.is_agent else principal.user,
                **claim_fields,
            )
            return answer(claim.pk), None, {"claim": str(claim.pk)}

        return idempotent_response(request, principal, "system-claim", write, lambda m, extra: answer(extra["claim"]))


class SystemClaimDetailApi(ApiView):
    @read_schema(
        operation_id="system_claims_read",
        responses={200: ClaimOutputSerializer},
        examples=[
            answered(
                "An admitted claim",
                {
                    **CLAIM_EXAMPLE,
                    "id": "6f1c3c0e-2a5b-4d0e-9a4f-0c8e7b1d2a33",
                    "status": "admitted",
                    "claimed_admission": "candidate",
                    "stance": None,
                    "superseded_by": None,
                    "erased": False,
                    "created_at": "2026-11-02T09:00:00Z",
                    "organisation": "acme",
                    "author": "agent helper",
                    "promoted_to": None,
                    "history": [
                        {
                            "decision": "admit",
                            "reason": "Matches the published rate",
                            "at": "2026-11-02T10:00:00Z",
                            "steward": "steward Fern Ortiz",
                            "stance": None,
                        }
                    ],
                },
            )
        ],
        tags=["system claims"],
    )
    def get(self, request, claim_id):
        """Read a system claim with its derived status and admission history.

        Stewards see claims from every organisation; anyone else sees their own organisation's claims, and another
        organisation's only while it is admitted. Any other claim answers 404.
        """
        principal = self.principal()
        claim = claim_visible_to(principal=principal, claim_id=claim_id)
        if claim is None:
            raise NotFound("No such system claim.")
        return Response(ClaimOutputSerializer(claim_output(claim, principal)).data)
