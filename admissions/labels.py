"""Who submitted a claim, in the vocabulary of `accounts.labels`."""

from __future__ import annotations

from accounts.labels import SYSTEM_LABEL, UNNAMED_STEWARD, agent_label, person_actor_label, steward_label

__all__ = ["UNNAMED_STEWARD", "claimant_label", "steward_label"]


def claimant_label(claim) -> str:
    """Who submitted a claim: its agent or its person (select_related both to keep a list at one query)."""
    if claim.agent_id:
        return agent_label(claim.agent)
    if claim.written_by_id:
        return person_actor_label(claim.written_by)
    return claim.source_label or SYSTEM_LABEL
