"""Directory writes through `PUT /api/v1/people/{handle}` leave account audit rows: who (the agent or the
owner), whom and when, by ids; a rename's row never holds the old or the new name."""

from __future__ import annotations

import json

from accounts.models import AccountAudit, Membership


def test_a_create_and_a_rename_are_audited_with_ids_and_no_names(agent_api, owner_api, org, owner, agent):
    assert agent_api.put("/api/v1/people/U9", {"display_name": "Ula Secret"}, format="json").status_code == 201
    assert owner_api.put("/api/v1/people/U9", {"display_name": "Ula Renamed"}, format="json").status_code == 200
    assert owner_api.put("/api/v1/people/U9", {"display_name": "Ula Renamed"}, format="json").status_code == 200
    person = Membership.objects.get(organisation=org, handle="U9").user_id
    rows = list(AccountAudit.objects.filter(organisation=org).order_by("id").values())
    assert [(row["action"], row["agent_id"], row["actor_id"], row["person_id"]) for row in rows] == [
        ("create", agent.pk, None, person),
        ("rename", None, owner.pk, person),  # the same name again changed nothing and wrote nothing
    ]
    stored = json.dumps(rows, default=str)
    assert "Ula" not in stored and "U9" not in stored
