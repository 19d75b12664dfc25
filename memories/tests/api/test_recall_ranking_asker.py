"""A first-person question ("my budget") prefers the asker's own facts over someone else's that score the same;
a question about no one in particular prefers neither."""

from __future__ import annotations

import pytest

from memories.models import SourceKind, SubjectType
from memories.recall import asker as asker_module
from memories.recall.asker import Asker, asker_of
from memories.scopes import Place
from memories.tests.api.helpers import recall, remember

MINE = "Budget is 500 euros"
THEIRS = "Budget is 500 euros!"  # the same words and length: the same score by words


def scores(response) -> dict[str, float]:
    assert response.status_code == 200, response.content
    return {row["body"]: row["rank"]["score"] for row in response.json()["results"]}


@pytest.fixture
def two_budgets(agent_api, dm_with_mona, general, second_member):
    assert remember(agent_api, dm_with_mona, MINE).status_code == 201  # mona's, in her DM
    theirs = remember(agent_api, general, THEIRS, scope="workspace", subject_type="user", subject_id="max")
    assert theirs.status_code == 201, theirs.content
    asker_module.names_forget()


def test_the_askers_fact_ranks_above_another_persons_same_score_fact_for_my(agent_api, dm_with_mona, two_budgets):
    found = scores(recall(agent_api, dm_with_mona, "What is my budget?", mode="contextual"))
    assert list(found)[:2] == [MINE, THEIRS]
    assert found[MINE] == pytest.approx(found[THEIRS] + 0.4)


def test_a_question_about_no_one_prefers_neither(agent_api, dm_with_mona, two_budgets):
    found = scores(recall(agent_api, dm_with_mona, "What is the budget?", mode="contextual"))
    assert found[MINE] == pytest.approx(found[THEIRS])


def test_where_no_one_person_asks_no_fact_is_preferred(agent_api, private_team, second_member):
    remember(agent_api, private_team, MINE, subject_type="user", subject_id="mona")
    remember(agent_api, private_team, THEIRS, subject_type="user", subject_id="max")
    found = scores(recall(agent_api, private_team, "What is my budget?", mode="contextual"))
    assert found[MINE] == pytest.approx(found[THEIRS])


def test_the_asker_is_the_one_person_a_place_names(org, member, second_member):
    mona = str(member.pk)
    found = asker_of(organisation_id=org.pk, place=Place("D-mona", "dm", (mona,)))
    assert found is not None and found.person == mona and "mona" in found.names
    assert asker_of(organisation_id=org.pk, place=Place("G", "private", (mona, str(second_member.pk)))) is None
    assert asker_of(organisation_id=org.pk, place=Place("C", "public", ())) is None


def test_transcript_lines_are_the_askers_only_when_they_spoke_them():
    mona = Asker(person="p1", names=frozenset({"Mona", "mona"}))
    line = {"source_kind": SourceKind.EPISODE, "subject_type": SubjectType.USER, "subject_id": "p1"}
    assert mona.owns(body="Mona: my sprint ends on Friday", **line)
    # In her DM the agent's lines are about her too, but she did not say them.
    assert not mona.owns(body="assistant: your sprint ends on Friday", **line)
    fact = {"source_kind": SourceKind.MESSAGE, "subject_type": SubjectType.USER}
    assert mona.owns(body="Sprint ends on Friday", subject_id="p1", **fact)
    assert not mona.owns(body="Sprint ends on Friday", subject_id="p2", **fact)
