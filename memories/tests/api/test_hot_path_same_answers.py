"""The request path's shortcuts (`lib.hot_path`) change how a call is read, never what it answers: the same
ranked results, renders and refusals with `HOT_PATH` on and off."""

from __future__ import annotations

import pytest

from memories.tests.api.helpers import recall, remember, render

pytestmark = pytest.mark.django_db

MODES = ["auto", "lexical", "recent", "contextual"]


def answers(agent_api, places: list[dict], turn: str) -> list:
    """What the same calls answer: recalls in every mode, a render, and refusals (a stranger's DM, a bad channel)."""
    said = []
    for place in places:
        for mode in MODES:
            answer = recall(agent_api, place, "Where is the tea kept?", mode=mode, limit=5)
            assert answer.status_code == 200, answer.content
            said.append([(row["id"], row["body"], row["scope"]) for row in answer.json()["results"]])
        rendered = render(agent_api, place, f"{turn}-{place['channel']}", question="tea")
        assert rendered.status_code == 200, rendered.content
        said.append(rendered.json()["text"])
    unknown = recall(agent_api, {"channel": "D-ghost", "kind": "dm", "people": ["ghost"]}, "tea")
    malformed = recall(agent_api, {"channel": "C/general", "kind": "public", "people": []}, "tea")
    said += [(unknown.status_code, unknown.json()), (malformed.status_code, malformed.json())]
    return said


def test_the_same_calls_answer_the_same_with_the_hot_path_on_and_off(agent_api, general, dm_with_mona, settings):
    for body in ("The tea is kept in the blue tin", "Tea time is at four", "The kettle is broken"):
        assert remember(agent_api, general, body).status_code == 201
    assert remember(agent_api, dm_with_mona, "Mona keeps green tea in her drawer").status_code == 201
    settings.HOT_PATH = True
    hot = answers(agent_api, [general, dm_with_mona], "hot")
    settings.HOT_PATH = False
    plain = answers(agent_api, [general, dm_with_mona], "plain")
    assert hot == plain
    # The positive control: the answers hold the facts, so a difference would show.
    assert any(rows and "blue tin" in rows[0][1] for rows in hot if isinstance(rows, list))
    assert hot[-2][0] == 400 and "ghost" in str(hot[-2][1]) and hot[-1][0] == 400


def test_a_remember_answers_the_same_with_the_hot_path_on_and_off(agent_api, general, settings):
    said = {}
    for hot_path in (True, False):
        settings.HOT_PATH = hot_path
        answer = remember(agent_api, general, f"The lunch bell rings at noon ({hot_path})", source_ref="msg-1")
        assert answer.status_code == 201, answer.content
        said[hot_path] = {
            key: value for key, value in answer.json().items() if key not in ("id", "created_at", "expires_at")
        }
        said[hot_path]["body"] = said[hot_path]["body"].replace(f"({hot_path})", "")
    assert said[True] == said[False]
