"""Live stances in the system plane, in place of the claims promoted to them: same switches, freshness,
limit and clamp as claims, marked as reviewed stances; retired or erased-source stances are not shown."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from django.test import override_settings

from accounts.models import Membership
from accounts.services import user_create
from admissions.models import StanceVersion
from admissions.services import admission_decide, claim_promote, stance_create, stance_retire, stance_revise
from admissions.system_recall import system_recall
from memories.models import InjectionLine
from memories.services import memory_redact

PLACE = {"channel": "C-general", "kind": "public", "people": []}


@pytest.fixture
def promote(steward, foreign_steward):
    def promote(claim, stance_id="uk-interest-rates"):
        admission_decide(claim=claim, steward=foreign_steward, decision="admit", reason="Checked")
        stance = stance_create(id=stance_id, title=stance_id.replace("-", " "), body="About it", reviewed_by=steward)
        claim_promote(claim=claim, steward=steward, stance=stance, reason="Belongs in the KB")
        return stance

    return promote


def render(client, turn_id):
    response = client.post("/api/v1/render", {"place": PLACE, "turn_id": turn_id}, format="json")
    assert response.status_code == 200, response.content
    return response.json()["text"]


@override_settings(SYSTEM_RECALL_ENABLED=True)
def test_the_stance_is_rendered_in_place_of_the_promoted_claim(reader_api, reader, make_claim, promote):
    claim = make_claim(body="The base rate is 4.75%", as_of=date.today())
    promote(claim)
    text = render(reader_api, "turn-stance")
    line = f"[reviewed stance uk-interest-rates, ledger tier, as of {date.today():%Y-%m-%d}, 1 evidence ref]"
    assert f"{line} The base rate is 4.75%" in text
    assert text.count("The base rate is 4.75%") == 1  # the stance, not the claim beside it
    # The line is traced to the claim it came from, so erasing that claim empties the record.
    assert InjectionLine.objects.filter(memory_id=claim.pk, organisation=reader).exists()


@override_settings(SYSTEM_RECALL_ENABLED=True)
def test_a_revised_stance_shows_its_new_text_only(reader_api, make_claim, promote, foreign_steward):
    stance = promote(make_claim(body="The base rate is 4.75%", as_of=date.today()))
    stance_revise(stance=stance, steward=foreign_steward, text="Bank Rate: 4.75% since November", reason="Clearer")
    text = render(reader_api, "turn-revised")
    assert "Bank Rate: 4.75% since November" in text and "The base rate is 4.75%" not in text


def test_without_the_flag_or_the_opt_in_no_stance_is_rendered(reader_api, reader, make_claim, promote, settings):
    promote(make_claim(body="The base rate is 4.75%", as_of=date.today()))
    assert "The base rate is 4.75%" not in render(reader_api, "turn-flag-off")
    settings.SYSTEM_RECALL_ENABLED = True
    reader.system_recall_opt_in = False
    reader.save()
    assert "The base rate is 4.75%" not in render(reader_api, "turn-no-opt-in")
    # Positive control: both switches on.
    reader.system_recall_opt_in = True
    reader.save()
    assert "The base rate is 4.75%" in render(reader_api, "turn-on")


@override_settings(SYSTEM_RECALL_ENABLED=True)
def test_a_retired_stance_leaves_the_plane(reader, make_claim, promote, steward, other_org):
    stance = promote(make_claim(as_of=date.today()))
    assert len(system_recall(organisation=reader, today=date.today())) == 1
    retirer = user_create(username="rita", organisation=other_org, role=Membership.Role.STEWARD, password="pw-r-1234")
    stance_retire(stance=stance, steward=retirer, reason="Superseded by policy")
    assert system_recall(organisation=reader, today=date.today()) == []


@override_settings(SYSTEM_RECALL_ENABLED=True)
def test_a_stance_whose_source_claim_was_erased_is_not_shown(reader, make_claim, promote, owner):
    claim = make_claim(as_of=date.today())
    promote(claim)
    assert len(system_recall(organisation=reader, today=date.today())) == 1
    memory_redact(memory=claim, actor=owner, reason="Erasure request")
    assert system_recall(organisation=reader, today=date.today()) == []


@override_settings(SYSTEM_RECALL_ENABLED=True, SYSTEM_RECALL_FRESHNESS_DAYS=30, SYSTEM_RECALL_LIMIT=2)
def test_stances_share_the_freshness_window_and_the_limit_with_claims(reader, make_claim, promote, foreign_steward):
    today = date.today()
    promote(make_claim(body="Stale stance", as_of=today - timedelta(days=31)), "stale")
    promote(make_claim(body="Fresh stance", as_of=today - timedelta(days=1)), "fresh")
    for days in (0, 2):
        claim = make_claim(body=f"Claim {days}", as_of=today - timedelta(days=days))
        admission_decide(claim=claim, steward=foreign_steward, decision="admit", reason="Checked")
    shown = [getattr(item, "body", None) or item.text for item in system_recall(organisation=reader, today=today)]
    assert shown == ["Claim 0", "Fresh stance"]
    assert StanceVersion.objects.live().count() == 2


@override_settings(SYSTEM_RECALL_ENABLED=True)
def test_a_long_stance_is_clamped_like_any_fact(reader_api, make_claim, promote):
    promote(make_claim(body="Rates " + "x" * 1500, as_of=date.today()))
    text = render(reader_api, "turn-long")
    (line,) = [line for line in text.splitlines() if "reviewed stance" in line]
    assert "x" * 400 in line and "x" * 600 not in line
