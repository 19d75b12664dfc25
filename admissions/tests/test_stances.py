"""Stances as knowledge: a promotion makes a live version from the claim, revisions are new versions the
old one points at, another steward retires one, and the database refuses any edit of a version's content."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction

from accounts.models import Membership
from accounts.services import user_create
from admissions.models import StanceVersion
from admissions.services import admission_decide, claim_promote, stance_create, stance_retire, stance_revise
from memories.models import Memory


@pytest.fixture
def third_steward(other_org):
    return user_create(username="sid", organisation=other_org, role=Membership.Role.STEWARD, password="pw-sid-123")


@pytest.fixture
def stance(steward):
    return stance_create(id="uk-interest-rates", title="UK interest rates", body="The base rate.", reviewed_by=steward)


def admit(claim, steward):
    admission_decide(claim=claim, steward=steward, decision="admit", reason="Matches the source")
    return claim


def test_a_promotion_makes_a_live_version_carrying_the_claims_content(claim, steward, foreign_steward, stance):
    admit(claim, foreign_steward)
    tombstone, _ = claim_promote(claim=claim, steward=steward, stance=stance, reason="Belongs in the KB")
    version = StanceVersion.objects.get(stance=stance)
    assert version.is_live and version.number == 1
    assert (version.text, version.entity, version.transparency, version.as_of, version.evidence_refs) == (
        claim.body,
        claim.entity,
        claim.transparency,
        claim.as_of,
        claim.evidence_refs,
    )
    assert list(version.sources.all()) == [Memory.objects.get(pk=claim.pk)]
    assert version.made_by == steward and version.reason == "Belongs in the KB"
    assert tombstone.stance == stance.pk


def test_a_second_promotion_is_a_new_version_with_both_sources_and_the_union_of_evidence(
    make_claim, steward, foreign_steward, stance
):
    first = admit(make_claim(as_of=date.today() - timedelta(days=9)), foreign_steward)
    claim_promote(claim=first, steward=steward, stance=stance, reason="KB")
    extra = {"kind": "document", "ref": "MPC minutes, November"}
    second = admit(make_claim(evidence_refs=[*first.evidence_refs, extra], as_of=date.today()), foreign_steward)
    claim_promote(claim=second, steward=steward, stance=stance, reason="More evidence")
    old, new = StanceVersion.objects.filter(stance=stance).order_by("number")
    assert old.superseded_by_id == new.pk and not old.is_live and new.is_live
    assert new.number == 2 and new.text == first.body and new.as_of == date.today()
    assert new.evidence_refs == [*first.evidence_refs, extra]
    assert set(new.sources.values_list("pk", flat=True)) == {first.pk, second.pk}
    # Both tombstones keep naming the stance's id.
    assert Memory.objects.filter(stance=stance.pk).count() == 2


def test_revising_makes_a_new_version_the_old_one_points_at(claim, steward, foreign_steward, stance):
    admit(claim, foreign_steward)
    claim_promote(claim=claim, steward=steward, stance=stance, reason="KB")
    new = stance_revise(stance=stance, steward=foreign_steward, text="The base rate is 4.75%.", reason="Tighter")
    old = StanceVersion.objects.get(stance=stance, number=1)
    assert old.superseded_by_id == new.pk
    assert (new.text, new.evidence_refs, new.as_of, new.made_by) == (
        "The base rate is 4.75%.",
        old.evidence_refs,
        old.as_of,
        foreign_steward,
    )
    assert list(new.sources.values_list("pk", flat=True)) == [claim.pk]
    assert Memory.objects.get(superseded_by__isnull=True, stance__isnull=False).stance == stance.pk


def test_a_revision_needs_new_text_and_a_reason(claim, steward, foreign_steward, stance):
    admit(claim, foreign_steward)
    claim_promote(claim=claim, steward=steward, stance=stance, reason="KB")
    with pytest.raises(ValidationError) as unchanged:
        stance_revise(stance=stance, steward=steward, text=claim.body, reason="Same")
    assert "text" in unchanged.value.message_dict
    with pytest.raises(ValidationError) as no_reason:
        stance_revise(stance=stance, steward=steward, text="New words", reason="  ")
    assert "reason" in no_reason.value.message_dict
    with pytest.raises(ValidationError) as too_long:
        stance_revise(stance=stance, steward=steward, text="x" * 2001, reason="Long")
    assert "2000" in str(too_long.value.message_dict["text"])
    assert StanceVersion.objects.filter(stance=stance).count() == 1


def test_another_steward_retires_a_stance_and_its_maker_cannot(claim, steward, foreign_steward, stance):
    admit(claim, foreign_steward)
    claim_promote(claim=claim, steward=steward, stance=stance, reason="KB")
    with pytest.raises(ValidationError) as own:
        stance_retire(stance=stance, steward=steward, reason="Mine")
    assert "another steward must retire it" in str(own.value)
    retired = stance_retire(stance=stance, steward=foreign_steward, reason="Out of date")
    assert not retired.is_live and retired.retired_by == foreign_steward
    with pytest.raises(ValidationError, match="not live, so there is nothing to retire"):
        stance_retire(stance=stance, steward=foreign_steward, reason="Again")
    with pytest.raises(ValidationError, match="Only a live stance can be revised"):
        stance_revise(stance=stance, steward=foreign_steward, text="Revived?", reason="No")


def test_promoting_into_a_retired_stance_starts_again_from_the_claim(
    make_claim, steward, foreign_steward, third_steward, stance
):
    first = admit(make_claim(), foreign_steward)
    claim_promote(claim=first, steward=steward, stance=stance, reason="KB")
    stance_retire(stance=stance, steward=third_steward, reason="Wrong")
    second = admit(make_claim(body="The base rate is 5%"), foreign_steward)
    claim_promote(claim=second, steward=steward, stance=stance, reason="Corrected")
    head = StanceVersion.objects.live().get(stance=stance)
    assert head.text == "The base rate is 5%" and list(head.sources.values_list("pk", flat=True)) == [second.pk]


def _raw(sql, params):
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql, params)


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE admissions_stanceversion SET text = 'rewritten' WHERE id = %s",
        "UPDATE admissions_stanceversion SET evidence_refs = '[]'::jsonb WHERE id = %s",
        "UPDATE admissions_stanceversion SET as_of = as_of - 1 WHERE id = %s",
        "DELETE FROM admissions_stanceversion WHERE id = %s",
        "DELETE FROM admissions_stancesource WHERE version_id = %s",
    ],
)
def test_the_database_refuses_to_edit_or_delete_a_version(claim, steward, foreign_steward, stance, sql):
    admit(claim, foreign_steward)
    claim_promote(claim=claim, steward=steward, stance=stance, reason="KB")
    version = StanceVersion.objects.get(stance=stance)
    with pytest.raises(IntegrityError, match="admissions_stance_"):
        _raw(sql, [version.pk])
    # Positive control: retiring is the one change a version takes.
    _raw(
        "UPDATE admissions_stanceversion SET retired_at = now(), retired_by_id = %s, retire_reason = 'r' WHERE id = %s",
        [str(foreign_steward.pk), version.pk],
    )


def test_the_database_refuses_a_second_current_version_and_a_half_retirement(claim, steward, foreign_steward, stance):
    admit(claim, foreign_steward)
    claim_promote(claim=claim, steward=steward, stance=stance, reason="KB")
    version = StanceVersion.objects.get(stance=stance)
    with pytest.raises(IntegrityError, match="admissions_stance_one_current"):
        _raw(
            "INSERT INTO admissions_stanceversion (stance_id, number, text, entity, transparency, as_of, evidence_refs,"
            " made_by_id, made_at, reason, retire_reason) SELECT stance_id, 2, text, entity, transparency, as_of,"
            " evidence_refs, made_by_id, made_at, reason, '' FROM admissions_stanceversion WHERE id = %s",
            [version.pk],
        )
    with pytest.raises(IntegrityError, match="admissions_stance_retired_together"):
        _raw("UPDATE admissions_stanceversion SET retired_at = now() WHERE id = %s", [version.pk])
