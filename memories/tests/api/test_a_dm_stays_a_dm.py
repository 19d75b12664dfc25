"""A DM's person never changes and a DM stays a DM, whoever asks: a place's kind changes only between private
and public (audited). Otherwise dm -> private -> other people -> dm hands one person's DM to another."""

from __future__ import annotations

import pytest

from memories.models import Channel, ChannelMember, PlaceAudit


def put_place(client, channel: str, body: dict):
    return client.put(f"/api/v1/places/{channel}", body, format="json")


def members(channel: str) -> list[str]:
    return [
        row.user.username for row in ChannelMember.objects.filter(channel__external_id=channel).select_related("user")
    ]


@pytest.mark.parametrize("asker", ["agent_api", "owner_api"])
def test_the_rebinding_path_is_refused_at_every_step(request, asker, org, member, second_member):
    api = request.getfixturevalue(asker)
    assert put_place(api, "D-v", {"kind": "dm", "people": ["mona"]}).status_code == 201
    steps = [
        {"kind": "private", "people": ["mona"]},
        {"kind": "private", "people": ["max"]},
        {"kind": "dm", "people": ["max"]},
        {"kind": "public", "people": ["mona"]},
        {"kind": "public", "people": []},
    ]
    for body in steps:
        response = put_place(api, "D-v", body)
        assert response.status_code == 409, (body, response.content)
    assert put_place(api, "D-v", {"kind": "public"}).status_code == 400  # people is the whole membership: required
    assert Channel.objects.get(external_id="D-v").kind == "dm" and members("D-v") == ["mona"]
    assert PlaceAudit.objects.filter(channel__external_id="D-v").count() == 1  # its creation only
    assert put_place(api, "D-v", {"kind": "dm", "people": ["mona"]}).status_code == 200  # positive control


def test_a_channel_never_becomes_a_dm_and_moves_between_private_and_public_audited(agent_api, org, member):
    assert put_place(agent_api, "C-1", {"kind": "private", "people": ["mona"]}).status_code == 201
    assert put_place(agent_api, "C-1", {"kind": "dm", "people": ["mona"]}).status_code == 409
    assert put_place(agent_api, "C-1", {"kind": "public", "people": ["mona"]}).status_code == 200
    assert put_place(agent_api, "C-1", {"kind": "dm", "people": ["mona"]}).status_code == 409
    assert put_place(agent_api, "C-1", {"kind": "private", "people": ["mona"]}).status_code == 200
    audit = PlaceAudit.objects.filter(channel__external_id="C-1").order_by("id")
    assert [(row.kind_from, row.kind_to) for row in audit] == [
        ("", "private"),
        ("private", "public"),
        ("public", "private"),
    ]
