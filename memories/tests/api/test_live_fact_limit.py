"""An agent keeps at most 2,000 live facts: past that it must forget before it remembers."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from memories.models import Author, Bucket, Memory, SourceKind
from memories.tests.api.helpers import remember


def fill(agent, count, **extra):
    expires = timezone.now() + timedelta(days=30)
    Memory.objects.bulk_create(
        [
            Memory(
                organisation_id=agent.organisation_id,
                agent=agent,
                bucket=Bucket.LEARNED,
                author=Author.MODEL,
                source_kind=SourceKind.MESSAGE,
                body=f"fact {index}",
                expires_at=expires,
                **extra,
            )
            for index in range(count)
        ]
    )


def test_the_2001st_live_fact_is_refused_until_one_is_forgotten(agent_api, agent, general):
    fill(agent, 2000)
    response = remember(agent_api, general, "One too many")
    assert response.status_code == 409
    assert "forget before remembering" in response.json()["detail"]
    assert Memory.objects.filter(agent=agent).count() == 2000
    one = Memory.objects.filter(agent=agent).first()
    assert agent_api.delete(f"/api/v1/memories/{one.pk}", {"place": general}, format="json").status_code == 200
    assert remember(agent_api, general, "Room again").status_code == 201


def test_expired_erased_and_corrected_facts_do_not_count(agent_api, agent, general):
    fill(agent, 1998)
    Memory.objects.filter(agent=agent).update(expires_at=timezone.now() - timedelta(days=1))
    fill(agent, 1998)
    erased = remember(agent_api, general, "Erased soon").json()
    agent_api.delete(f"/api/v1/memories/{erased['id']}", {"place": general}, format="json")
    old = remember(agent_api, general, "Corrected soon").json()
    agent_api.post(f"/api/v1/memories/{old['id']}/supersede", {"body": "Corrected", "place": general}, format="json")
    assert remember(agent_api, general, "Still room").status_code == 201
    assert remember(agent_api, general, "Now full").status_code == 409


def test_the_limit_is_per_agent(agent_api, second_agent_api, agent, general):
    fill(agent, 2000)
    assert remember(second_agent_api, general, "The other agent has room").status_code == 201
