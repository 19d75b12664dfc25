"""Stances promoted before versions existed get version 1 from their promoted claims (0003_stances)."""

from __future__ import annotations

import importlib
from datetime import date, timedelta

from django.apps import apps

from admissions.models import AdmissionRecord, StanceVersion
from admissions.services import admission_decide, stance_create, tombstone_body
from memories.models import Author, Bucket, ClaimedAdmission, SourceKind
from memories.services import memory_point_to_replacement
from memories.tests.remembered import remembered

stances_migration = importlib.import_module("admissions.migrations.0003_stances")


def promote_the_old_way(claim, steward, stance):
    """What a promotion wrote before 0003: the tombstone, the pointer and the record, no version."""
    tombstone = remembered(
        organisation=claim.organisation,
        bucket=Bucket.SYSTEM,
        author=Author.PERSON,
        body=tombstone_body(stance=stance),
        source_kind=SourceKind.PERSON,
        system_fields=dict(
            slug=claim.slug,
            entity=claim.entity,
            transparency=claim.transparency,
            as_of=claim.as_of,
            admission=ClaimedAdmission.CANDIDATE,
            evidence_refs=claim.evidence_refs,
            stance=stance.pk,
        ),
    )
    memory_point_to_replacement(memory=claim, replacement=tombstone, actor=steward)
    AdmissionRecord.objects.create(
        organisation_id=claim.organisation_id,
        claim_id=claim.pk,
        decision="promote",
        steward=steward,
        reason="KB",
        stance=stance,
        tombstone=tombstone,
    )


def test_old_promotions_become_a_first_version_with_every_source(make_claim, steward, foreign_steward):
    stance = stance_create(id="uk-rates", title="UK rates", body="About", reviewed_by=steward)
    first = make_claim(body="First words", as_of=date.today() - timedelta(days=5))
    extra = {"kind": "document", "ref": "minutes"}
    second = make_claim(body="Second words", evidence_refs=[*first.evidence_refs, extra])
    for claim in (first, second):
        admission_decide(claim=claim, steward=foreign_steward, decision="admit", reason="ok")
        promote_the_old_way(claim, steward, stance)
    assert not StanceVersion.objects.exists()

    stances_migration.first_versions(apps, None)

    version = StanceVersion.objects.get()
    assert (version.number, version.text, version.as_of, version.made_by) == (1, "First words", date.today(), steward)
    assert version.evidence_refs == [*first.evidence_refs, extra] and version.is_live
    assert set(version.sources.values_list("pk", flat=True)) == {first.pk, second.pk}
