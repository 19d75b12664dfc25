"""Each rule of the memory model, proven twice: the service names the field,
and a raw SQL write that skips the service is refused by PostgreSQL."""

from __future__ import annotations

import json
import uuid
from datetime import date, timedelta

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from memories.models import BODY_MAX_CHARS, Bucket, Memory

SYSTEM = dict(
    bucket=Bucket.SYSTEM,
    author="model",
    source_kind="run",
    system_fields=dict(
        slug="sys:rates-2026",
        entity="bank-of-england",
        transparency="ledger",
        as_of=date(2026, 11, 1),
        admission="candidate",
        evidence_refs=[{"kind": "url", "ref": "https://example.org/rates"}],
    ),
    owner=None,
    written_by=None,
)


def _columns(org, **overrides):
    """A valid user-bucket row as raw column values."""
    now = timezone.now()
    row = dict(
        id=str(uuid.uuid4()),
        organisation_id=str(org.id),
        bucket="user",
        body="Likes green",
        subject_type="workspace",
        subject_id="",
        scope="workspace",
        scope_ref="",
        scope_label="",
        author="person",
        source_kind="person",
        source_ref="",
        source_label="",
        source_run_id="",
        tier="log",
        pinned=False,
        expires_at=now + timedelta(days=90),
        embedding_model="",
        embedding_attempts=0,
        embedding_error="",
        redacted_by_label="",
        redaction_reason="",
        created_at=now,
        updated_at=now,
    )
    row.update(overrides)
    return row


def raw_insert(org, **overrides):
    row = _columns(org, **overrides)
    for key, value in row.items():
        if isinstance(value, (list, dict)):
            row[key] = json.dumps(value)
    names = ", ".join(row)
    placeholders = ", ".join(["%s"] * len(row))
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"INSERT INTO memories_memory ({names}) VALUES ({placeholders})", list(row.values()))
    return row["id"]


def raw_update(memory_id, sql_set, params=()):
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"UPDATE memories_memory SET {sql_set} WHERE id = %s", [*params, str(memory_id)])


def refused_by(constraint: str):
    return pytest.raises(IntegrityError, match=constraint)


def field_error(excinfo, field: str) -> str:
    return " ".join(excinfo.value.message_dict[field])


def test_raw_insert_helper_writes_a_valid_row(org):
    memory_id = raw_insert(org)
    assert Memory.objects.filter(pk=memory_id).exists()


# --- Body --------------------------------------------------------------------


def test_body_over_the_limit_is_refused_never_cut(make_memory, org):
    with pytest.raises(ValidationError) as excinfo:
        make_memory(body="x" * (BODY_MAX_CHARS + 1))
    assert "2000" in field_error(excinfo, "body")
    assert Memory.objects.count() == 0
    with refused_by("memories_body_text"):
        raw_insert(org, body="x" * (BODY_MAX_CHARS + 1))


def test_body_at_the_limit_is_kept_whole(make_memory):
    memory = make_memory(body="y" * BODY_MAX_CHARS)
    assert len(Memory.objects.get(pk=memory.pk).body) == BODY_MAX_CHARS


@pytest.mark.parametrize("body", ["", "   ", "\n\t "])
def test_empty_or_whitespace_body_is_refused(make_memory, org, body):
    with pytest.raises(ValidationError) as excinfo:
        make_memory(body=body)
    assert "empty" in field_error(excinfo, "body")
    with refused_by("memories_shape|memories_body_text"):
        raw_insert(org, body=body)


def test_body_is_trimmed_by_the_service_and_untrimmed_bodies_are_refused_by_the_database(make_memory, org):
    assert make_memory(body="  padded  ").body == "padded"
    with refused_by("memories_body_text"):
        raw_insert(org, body=" padded")


@pytest.mark.parametrize("char", ["\x01", "\x1b", "\x7f", "\x0b", "\x80", "\x85", "\x9b", "\x9f"])
def test_control_characters_are_refused(make_memory, org, char):
    with pytest.raises(ValidationError) as excinfo:
        make_memory(body=f"bad{char}body")
    assert "control" in field_error(excinfo, "body")
    with refused_by("memories_body_text"):
        raw_insert(org, body=f"bad{char}body")


def test_nul_is_refused_with_the_field_named(make_memory):
    with pytest.raises(ValidationError) as excinfo:
        make_memory(body="nul\x00here")
    assert "NUL" in field_error(excinfo, "body")


def test_newline_and_tab_are_allowed(make_memory):
    assert make_memory(body="line one\n\tline two").body == "line one\n\tline two"


# --- Subject and scope ---------------------------------------------------------


@pytest.mark.parametrize("subject_type", ["candidate", "user"])
def test_personal_subject_requires_a_subject_id(make_memory, org, subject_type):
    with pytest.raises(ValidationError) as excinfo:
        make_memory(subject_type=subject_type, subject_id="")
    assert "subject" in field_error(excinfo, "subject_id")
    with refused_by("memories_subject_named"):
        # An agent's row: a person's row about a user breaks memories_own_fact_about_its_writer as well.
        raw_insert(
            org, bucket="learned", author="model", source_kind="message", subject_type=subject_type, subject_id=""
        )


def test_workspace_subject_takes_no_subject_id(make_memory, org):
    with pytest.raises(ValidationError) as excinfo:
        make_memory(subject_type="workspace", subject_id="alice")
    assert field_error(excinfo, "subject_id")
    with refused_by("memories_subject_named"):
        raw_insert(org, subject_type="workspace", subject_id="alice")


def test_scope_ref_is_empty_exactly_for_workspace_scope(make_memory, org):
    with pytest.raises(ValidationError) as excinfo:
        make_memory(scope="channel", scope_ref="")
    assert field_error(excinfo, "scope_ref")
    with pytest.raises(ValidationError) as workspace_error:
        make_memory(scope="workspace", scope_ref="C1")
    assert field_error(workspace_error, "scope_ref")
    with refused_by("memories_scope_ref"):
        raw_insert(org, scope="person", scope_ref="")
    with refused_by("memories_scope_ref"):
        raw_insert(org, scope="workspace", scope_ref="C1")
    assert make_memory(scope="channel", scope_ref="C1").scope_ref == "C1"


def test_unknown_enums_are_refused(make_memory, org):
    with pytest.raises(ValidationError) as excinfo:
        make_memory(tier="forever")
    assert field_error(excinfo, "tier")
    with refused_by("memories_enums_valid"):
        raw_insert(org, tier="forever")
    with refused_by("memories_bucket_valid"):
        raw_insert(org, bucket="gossip")


# --- Expiry ------------------------------------------------------------------


def test_expiry_defaults_to_ninety_days_for_notes_too_which_only_fade_from_render(make_memory):
    now = timezone.now()
    log = make_memory(now=now)
    note = make_memory(tier="note", now=now)
    assert log.expires_at == now + timedelta(days=90)
    assert note.expires_at == now + timedelta(days=90)


def test_user_and_learned_rows_must_expire(org):
    for bucket in ("user", "learned"):
        with refused_by("memories_expiry_required"):
            raw_insert(org, bucket=bucket, expires_at=None)


def test_expiry_in_the_past_is_refused(make_memory):
    with pytest.raises(ValidationError) as excinfo:
        make_memory(expires_at=timezone.now() - timedelta(days=1))
    assert field_error(excinfo, "expires_at")


# --- System shape ------------------------------------------------------------


def test_system_claim_with_every_field_is_stored(make_memory):
    claim = make_memory(body="Base rate is 4%", **SYSTEM)
    assert claim.slug == "sys:rates-2026" and claim.expires_at is None and claim.promoted is False


@pytest.mark.parametrize(
    "field,value",
    [
        ("slug", None),
        ("slug", "rates-2026"),
        ("transparency", None),
        ("transparency", "opaque"),
        ("as_of", None),
        ("admission", None),
        ("evidence_refs", []),
        ("evidence_refs", None),
        ("evidence_refs", [{"kind": "rumour", "ref": "x"}]),
        ("evidence_refs", [{"kind": "url"}]),
        ("evidence_refs", [{"kind": "url", "ref": "  "}]),
    ],
)
def test_system_fields_are_required_together(make_memory, org, field, value):
    system_fields = {**SYSTEM["system_fields"], field: value}
    with pytest.raises(ValidationError) as excinfo:
        make_memory(body="Claim", **{**SYSTEM, "system_fields": system_fields})
    assert field in excinfo.value.message_dict
    raw = {**system_fields, "as_of": system_fields["as_of"]}
    with refused_by("memories_system_shape"):
        raw_insert(org, bucket="system", author="model", source_kind="run", expires_at=None, **raw)


@pytest.mark.parametrize(
    "field,value",
    [
        ("slug", "sys:x"),
        ("entity", "boe"),
        ("transparency", "glass"),
        ("as_of", date(2026, 1, 1)),
        ("admission", "admitted"),
        ("evidence_refs", [{"kind": "url", "ref": "https://e.org"}]),
        ("stance", "a-stance"),
    ],
)
def test_system_fields_are_refused_on_user_and_learned_rows(make_memory, org, field, value):
    with pytest.raises(ValidationError) as excinfo:
        make_memory(system_fields={field: value})
    assert "system memory" in field_error(excinfo, field)
    with refused_by("memories_system_shape"):
        raw_insert(org, body=f"Mentions {value}", **{field: value})


def test_stance_must_be_hyphenated_lowercase_and_named_in_the_body(make_memory, org):
    tombstone = dict(SYSTEM, system_fields={**SYSTEM["system_fields"], "stance": "interest-rates"})
    with pytest.raises(ValidationError) as excinfo:
        make_memory(body="Promoted elsewhere", **tombstone)
    assert "stance" in field_error(excinfo, "body")
    bad = dict(SYSTEM, system_fields={**SYSTEM["system_fields"], "stance": "Interest Rates"})
    with pytest.raises(ValidationError) as excinfo:
        make_memory(body="Promoted to Interest Rates", **bad)
    assert field_error(excinfo, "stance")
    system_columns = dict(
        bucket="system", author="model", source_kind="run", expires_at=None, **SYSTEM["system_fields"]
    )
    with refused_by("memories_shape"):
        raw_insert(org, body="Promoted elsewhere", stance="interest-rates", **system_columns)
    with refused_by("memories_shape"):
        raw_insert(org, body="Promoted to Interest Rates", stance="Interest Rates", **system_columns)
    row = make_memory(body="Promoted to stance interest-rates", **tombstone)
    assert Memory.objects.get(pk=row.pk).promoted is True


# --- Nothing edits a body ----------------------------------------------------


@pytest.mark.parametrize(
    "sql_set,params",
    [
        ("body = %s", ["rewritten"]),
        ("bucket = %s", ["learned"]),
        ("author = %s", ["model"]),
        ("source_ref = %s", ["msg-9"]),
        ("source_kind = %s", ["run"]),
        ("subject_type = %s, subject_id = %s", ["user", "someone"]),
        ("owner_id = NULL", []),
    ],
)
def test_trigger_refuses_changes_to_content_and_provenance(make_memory, sql_set, params):
    memory = make_memory()
    with refused_by("memories_immutable"):
        raw_update(memory.id, sql_set, params)


def test_trigger_refuses_moving_a_row_to_another_tenant(make_memory, other_org):
    memory = make_memory()
    with refused_by("memories_immutable"):
        raw_update(memory.id, "organisation_id = %s", [str(other_org.id)])


def test_trigger_allows_what_may_change(make_memory):
    memory = make_memory()
    raw_update(memory.id, "pinned = true, tier = 'profile'")
    assert Memory.objects.get(pk=memory.pk).pinned


def test_redaction_is_the_one_way_to_empty_a_body(make_memory):
    memory = make_memory()
    raw_update(memory.id, "body = '', embedding = NULL, redacted_at = now(), redaction_reason = 'asked'")
    assert Memory.objects.get(pk=memory.pk).body == ""
    with refused_by("memories_immutable"):
        raw_update(memory.id, "redacted_at = NULL, body = 'back again'")


def test_redaction_must_clear_the_vector(make_memory):
    memory = make_memory()
    raw_update(memory.id, "embedding = %s::halfvec", ["[" + ",".join(["0.1"] * 384) + "]"])
    with refused_by("memories_redaction_empties"):
        raw_update(memory.id, "body = '', redacted_at = now()")


def test_superseded_by_is_set_once_and_never_to_itself(make_memory):
    first, second, third = make_memory(body="v1"), make_memory(body="v2"), make_memory(body="v3")
    with refused_by("memories_shape"):
        raw_update(first.id, "superseded_by_id = id")
    raw_update(first.id, "superseded_by_id = %s", [str(second.id)])
    with refused_by("memories_supersede_once"):
        raw_update(first.id, "superseded_by_id = %s", [str(third.id)])


def test_only_a_live_row_can_be_superseded(make_memory):
    gone, replacement = make_memory(body="gone"), make_memory(body="new")
    raw_update(gone.id, "body = '', redacted_at = now()")
    with refused_by("memories_supersede_once"):
        raw_update(gone.id, "superseded_by_id = %s", [str(replacement.id)])
