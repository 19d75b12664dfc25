"""The memory services: correct (supersede), erase (redact), pin, and the chain."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.db import connection

from memories.models import Memory, MemoryAudit
from memories.selectors import memory_supersede_chain
from memories.services import memory_redact, memory_set_pinned, memory_supersede


def test_a_supersede_chain_of_three_reads_back_in_order(make_memory, member):
    first = make_memory(body="Lives in Leeds")
    second = memory_supersede(memory=first, body="Lives in York", actor=member)
    third = memory_supersede(memory=second, body="Lives in Hull", actor=member)
    for version in (first, second, third):
        version.refresh_from_db()
        chain = memory_supersede_chain(memory=version)
        assert [row.body for row in chain] == ["Lives in Leeds", "Lives in York", "Lives in Hull"]
    assert first.superseded_by_id == second.id and second.superseded_by_id == third.id
    assert first.valid_until is not None and third.valid_until is None


def test_a_correction_is_a_new_row_and_the_old_body_is_untouched(make_memory, member):
    old = make_memory(body="Prefers tea")
    new = memory_supersede(memory=old, body="Prefers coffee", actor=member)
    old.refresh_from_db()
    assert old.body == "Prefers tea" and new.body == "Prefers coffee" and new.pk != old.pk
    assert (new.scope, new.scope_ref, new.subject_type) == (old.scope, old.scope_ref, old.subject_type)
    assert MemoryAudit.objects.filter(memory=old, action="supersede").exists()


def test_an_old_version_cannot_be_corrected_twice(make_memory, member):
    old = make_memory(body="v1")
    memory_supersede(memory=old, body="v2", actor=member)
    with pytest.raises(ValidationError) as excinfo:
        memory_supersede(memory=old, body="v2 again", actor=member)
    assert "memory" in excinfo.value.message_dict


def test_a_correction_obeys_the_body_rules(make_memory, member):
    old = make_memory(body="v1")
    with pytest.raises(ValidationError) as excinfo:
        memory_supersede(memory=old, body="   ", actor=member)
    assert "body" in excinfo.value.message_dict
    old.refresh_from_db()
    assert old.superseded_by_id is None
    assert Memory.objects.count() == 1


def test_redaction_really_removes_the_body_the_vector_and_the_search_vector(make_memory, member):
    memory = make_memory(body="Secret marker zebracorn")
    Memory.objects.filter(pk=memory.pk).update(embedding=[0.5] * 384, embedding_model="test")
    memory_redact(memory=memory, reason="subject asked", actor=member)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT body, embedding IS NULL, search_vector::text, redacted_at IS NOT NULL, redaction_reason"
            " FROM memories_memory WHERE id = %s",
            [str(memory.pk)],
        )
        body, vector_gone, search_text, redacted, reason = cursor.fetchone()
    assert body == "" and vector_gone and search_text == "" and redacted and reason == "subject asked"
    assert not Memory.objects.filter(body__contains="zebracorn").exists()
    assert MemoryAudit.objects.filter(memory=memory, action="redact", actor=member).exists()


def test_redaction_needs_a_reason_and_is_idempotent(make_memory, member):
    memory = make_memory()
    with pytest.raises(ValidationError) as excinfo:
        memory_redact(memory=memory, reason=" ", actor=member)
    assert "reason" in excinfo.value.message_dict
    first = memory_redact(memory=memory, reason="asked", actor=member)
    again = memory_redact(memory=memory, reason="asked twice", actor=member)
    assert again.redacted_at == first.redacted_at and again.redaction_reason == "asked"


def test_an_erased_memory_cannot_be_corrected_or_pinned(make_memory, member):
    memory = make_memory()
    memory_redact(memory=memory, reason="asked", actor=member)
    with pytest.raises(ValidationError, match="An erased memory cannot be corrected"):
        memory_supersede(memory=memory, body="resurrected", actor=member)
    with pytest.raises(ValidationError, match="An erased memory cannot be pinned"):
        memory_set_pinned(memory=memory, pinned=True, actor=member)


def test_pinning_is_recorded(make_memory, member):
    memory = make_memory()
    memory_set_pinned(memory=memory, pinned=True, actor=member)
    memory.refresh_from_db()
    assert memory.pinned
    assert MemoryAudit.objects.filter(memory=memory, action="pin").count() == 1
