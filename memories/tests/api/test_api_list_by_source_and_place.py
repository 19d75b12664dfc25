"""GET /api/v1/memories filters by source reference (exact or by prefix) and by place (`channel`)."""

from __future__ import annotations

from memories.tests.api.helpers import remember


def bodies(client, **params) -> list[str]:
    response = client.get("/api/v1/memories", params)
    assert response.status_code == 200, response.json()
    return sorted(row["body"] for row in response.json()["results"])


def test_list_filters_by_source_ref_and_its_prefix(agent_api, general):
    remember(agent_api, general, "From the tool", source_ref="memtool/C-general/channel/a.md")
    remember(agent_api, general, "Also from the tool", source_ref="memtool/C-general/channel/b.md")
    remember(agent_api, general, "From a message", source_ref="msg-1")
    here = {"place": "C-general"}  # an agent names the place it serves
    assert bodies(agent_api, **here) == ["Also from the tool", "From a message", "From the tool"]  # the control
    assert bodies(agent_api, **here, source_ref="msg-1") == ["From a message"]
    assert bodies(agent_api, **here, source_ref_prefix="memtool/C-general/") == ["Also from the tool", "From the tool"]
    assert bodies(agent_api, **here, source_ref="nothing") == []


def test_list_filters_by_place_a_channels_facts_and_a_dms_persons(
    agent_api, member_api, general, private_team, dm_with_mona
):
    remember(agent_api, general, "General fact")
    remember(agent_api, private_team, "Team fact")
    remember(agent_api, dm_with_mona, "Mona's fact")
    assert bodies(member_api, channel="G-team") == ["Team fact"]
    assert bodies(member_api, channel="D-mona") == ["Mona's fact"]
    assert bodies(member_api, channel="C-nowhere") == []


def test_an_overlong_filter_is_refused_by_name(agent_api, general):
    response = agent_api.get("/api/v1/memories", {"place": "C-general", "source_ref": "x" * 201})
    assert response.status_code == 400 and "source_ref" in response.json()["fields"]
