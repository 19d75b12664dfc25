"""Subject requests: everything held about a subject as a JSON export, and its erasure with receipts."""

from __future__ import annotations

from memories.models import Memory
from memories.services import memory_redact
from memories.subjects import subject_export
from memories.tests.api.helpers import remember, session_client


def about_mona(make_memory, member, body, **extra):
    return make_memory(body=body, subject_type="user", subject_id=str(member.pk), **extra)


def test_a_person_exports_everything_held_about_them_oldest_first_with_receipts(
    member_api, make_memory, member, agent_api, dm_with_mona
):
    first = about_mona(make_memory, member, "Mona leads data")
    remember(agent_api, dm_with_mona, "Mona prefers tea")  # person scope, subject mona by default
    gone = about_mona(make_memory, member, "Mona's old phone number")
    memory_redact(memory=gone, reason="out of date", actor=member)
    make_memory(body="Unrelated fact")
    response = member_api.get(f"/api/v1/subjects/user/{member.pk}/memories")
    assert response.status_code == 200, response.content
    data = response.json()
    assert data["count"] == 3 and data["subject_id"] == str(member.pk)
    assert [row["body"] for row in data["memories"]] == ["Mona leads data", "Mona prefers tea", ""]
    assert data["memories"][2]["receipt"]["reason"] == "out of date"
    assert data["memories"][0]["id"] == str(first.pk)
    assert "attachment" in response["Content-Disposition"]


def test_a_username_names_the_same_subject(member_api, make_memory, member):
    about_mona(make_memory, member, "Mona leads data")
    assert member_api.get("/api/v1/subjects/user/mona/memories").json()["count"] == 1


def test_nobody_else_exports_a_persons_data_not_even_an_owner(owner_api, agent_api, make_memory, member):
    about_mona(make_memory, member, "Mona leads data")
    assert owner_api.get(f"/api/v1/subjects/user/{member.pk}/memories").status_code == 403
    assert agent_api.get(f"/api/v1/subjects/user/{member.pk}/memories").status_code == 403


def test_an_erasure_leaves_one_receipt_per_row_and_returns_the_counts(member_api, make_memory, member):
    about_mona(make_memory, member, "Mona leads data")
    about_mona(make_memory, member, "Mona likes tea", scope="channel", scope_ref="C-x")
    earlier = about_mona(make_memory, member, "Mona's old address")
    memory_redact(memory=earlier, reason="moved", actor=member)
    response = member_api.post(f"/api/v1/subjects/user/{member.pk}/erase", {"reason": "Erase me"}, format="json")
    assert response.status_code == 200, response.content
    data = response.json()
    assert (data["erased"], data["already_erased"]) == (2, 1) and len(data["receipts"]) == 3
    assert {receipt["reason"] for receipt in data["receipts"]} == {"Erase me", "moved"}
    rows = Memory.objects.filter(subject_id=str(member.pk))
    assert rows.count() == 3 and not rows.exclude(body="").exists()
    assert not rows.filter(redacted_at__isnull=True).exists()
    export = member_api.get(f"/api/v1/subjects/user/{member.pk}/memories").json()
    assert all(row["state"] == "erased" and row["body"] == "" for row in export["memories"])


def test_an_owner_may_erase_a_persons_data_but_another_member_may_not(owner_api, make_memory, member, second_member):
    about_mona(make_memory, member, "Mona leads data")
    assert session_client(second_member).post(f"/api/v1/subjects/user/{member.pk}/erase").status_code == 403
    assert owner_api.post(f"/api/v1/subjects/user/{member.pk}/erase").json()["erased"] == 1


def test_candidates_requests_are_handled_by_agents_and_owners(agent_api, member_api, general):
    remember(agent_api, general, "Strong in SQL", subject_type="candidate", subject_id="cand-881")
    assert member_api.get("/api/v1/subjects/candidate/cand-881/memories").status_code == 403
    assert agent_api.get("/api/v1/subjects/candidate/cand-881/memories").json()["count"] == 1
    assert agent_api.post("/api/v1/subjects/candidate/cand-881/erase", {}, format="json").json()["erased"] == 1


def test_an_unknown_subject_type_is_refused_by_name(agent_api):
    response = agent_api.get("/api/v1/subjects/planet/mars/memories")
    assert response.status_code == 400 and "subject_type" in response.json()["fields"]


def test_another_organisations_account_is_not_a_subject_here(owner_api, outsider):
    assert owner_api.post(f"/api/v1/subjects/user/{outsider.pk}/erase").status_code == 404


def test_the_export_selector_is_oldest_first(make_memory, member, org):
    about_mona(make_memory, member, "one")
    about_mona(make_memory, member, "two")
    rows = subject_export(organisation=org, subject_type="user", subject_id=str(member.pk))
    assert [row.body for row in rows] == ["one", "two"]
