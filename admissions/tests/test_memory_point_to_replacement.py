"""memories.services.memory_point_to_replacement: the one pointer write promotion needs."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from memories.models import Memory, MemoryAudit
from memories.services import memory_point_to_replacement, memory_redact


def test_it_points_the_row_at_the_replacement_and_audits_it(make_claim, steward):
    old, new = make_claim(), make_claim(body="A newer claim")
    memory_point_to_replacement(memory=old, replacement=new, actor=steward)
    old.refresh_from_db()
    assert old.superseded_by_id == new.pk and old.valid_until is not None
    audit = MemoryAudit.objects.get(memory=old, action="supersede")
    assert audit.actor == steward and audit.detail == {"replacement": str(new.pk)}


def test_it_refuses_a_row_already_superseded(make_claim):
    old, first, second = make_claim(), make_claim(body="First"), make_claim(body="Second")
    memory_point_to_replacement(memory=old, replacement=first)
    with pytest.raises(ValidationError) as error:
        memory_point_to_replacement(memory=old, replacement=second)
    assert "memory" in error.value.message_dict
    old.refresh_from_db()
    assert old.superseded_by_id == first.pk


def test_it_refuses_itself_another_organisation_and_an_erased_row(make_claim, other_org, outsider, member):
    row = make_claim()
    with pytest.raises(ValidationError, match="cannot replace itself"):
        memory_point_to_replacement(memory=row, replacement=row)
    foreign = make_claim(organisation=other_org, user=outsider)
    with pytest.raises(ValidationError) as error:
        memory_point_to_replacement(memory=row, replacement=foreign)
    assert "replacement" in error.value.message_dict
    erased = memory_redact(memory=make_claim(body="Gone"), reason="asked", actor=member)
    with pytest.raises(ValidationError, match="An erased memory cannot be superseded"):
        memory_point_to_replacement(memory=erased, replacement=row)
    assert not Memory.objects.filter(superseded_by__isnull=False).exists()


def test_the_database_still_refuses_a_second_pointer_written_around_it(make_claim):
    old, first, second = make_claim(), make_claim(body="First"), make_claim(body="Second")
    memory_point_to_replacement(memory=old, replacement=first)
    with pytest.raises(IntegrityError, match="memories_supersede_once"), transaction.atomic():
        Memory.objects.filter(pk=old.pk).update(superseded_by=second)
