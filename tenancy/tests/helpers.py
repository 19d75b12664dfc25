"""Connections as the application's roles, and two tenants with a row in every protected table."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from datetime import date

import psycopg
from django.db import connection
from django.utils import timezone

from accounts.auth import Principal
from accounts.models import Agent, Membership, Organisation, User
from accounts.people import person_upsert
from accounts.services import agent_create, organisation_create, user_create
from admissions.services import admission_decide, claim_submit
from lib.api.idempotency import idempotent_write
from memories.models import Memory, TenantVectorIndex
from memories.places import place_recorded
from memories.turns.injections import injection_render
from memories.turns.writes import RememberRequest, memory_remember_in_place
from tenancy.sql import APP_ROLE, CROSS_TENANT_SETTING, TENANT_SETTING, TOKEN_HASH_SETTING
from threads.consolidation import thread_consolidate
from threads.ingest import thread_events_ingest


@contextlib.contextmanager
def role_connection(role: str = APP_ROLE):
    """A fresh connection to the test database acting as `role`, outside Django (so nothing is shared)."""
    params = connection.settings_dict
    conn = psycopg.connect(
        dbname=params["NAME"],
        user=params["USER"] or None,
        password=params["PASSWORD"] or None,
        host=params["HOST"] or None,
        port=params["PORT"] or None,
        autocommit=True,
    )
    try:
        if role:
            conn.execute(psycopg.sql.SQL("SET ROLE {}").format(psycopg.sql.Identifier(role)))
        yield conn
    finally:
        conn.close()


@contextlib.contextmanager
def scoped(conn, *, organisation_id="", cross_tenant: str = "", token_hash: str = ""):
    """A transaction on `conn` with the request settings made in it, as the middleware makes them."""
    with conn.transaction():
        conn.execute(
            "SELECT set_config(%s, %s, true), set_config(%s, %s, true), set_config(%s, %s, true)",
            [TENANT_SETTING, str(organisation_id), CROSS_TENANT_SETTING, cross_tenant, TOKEN_HASH_SETTING, token_hash],
        )
        yield conn


def count(conn, table: str, where: str = "true", params=()) -> int:
    return conn.execute(f"SELECT count(*) FROM {table} WHERE {where}", params).fetchone()[0]


def organisations_seen(conn, table: str) -> set[str]:
    return {str(row[0]) for row in conn.execute(f"SELECT DISTINCT organisation_id FROM {table}").fetchall()}


@dataclass
class Tenant:
    organisation: Organisation
    owner: User
    member: User
    agent: Agent
    token: str
    memory: Memory
    claim: Memory


def tenant_with_everything(slug: str, *, steward: User, decision: str) -> Tenant:
    """An organisation with at least one row in every protected table, written through the services."""
    organisation = organisation_create(slug=slug, name=slug.title())
    owner = user_create(username=f"{slug}-owner", organisation=organisation, role=Membership.Role.OWNER, password="pw")
    member = user_create(username=f"{slug}-member", organisation=organisation, role=Membership.Role.MEMBER)
    agent, token = agent_create(organisation=organisation, name=f"{slug}-agent")
    resolved = place_recorded(organisation=organisation, channel=f"D-{slug}", kind="dm", people=[member.username])
    person_upsert(organisation=organisation, handle=f"{slug}-directory", display_name="", agent=agent)  # audited

    def write():
        memory, choice = memory_remember_in_place(
            RememberRequest(body=f"{slug} prefers tea"), organisation=organisation, resolved=resolved, writer=agent
        )
        return memory, {"scope_reason": choice.reason}

    memory, _, _ = idempotent_write(
        organisation=organisation,
        principal=f"agent:{agent.pk}",
        key=f"{slug}-key",
        endpoint="remember",
        fingerprint="f" * 64,
        write=write,
    )
    injection_render(
        principal=Principal(organisation=organisation, agent=agent), resolved=resolved, turn_id=f"{slug}-turn"
    )
    TenantVectorIndex.objects.create(organisation=organisation, index_name=f"memories_hnsw_test_{slug}")
    claim = claim_submit(
        organisation=organisation,
        body=f"{slug} publishes its rates monthly",
        slug=f"sys:{slug}-rates",
        entity=slug,
        transparency="ledger",
        as_of=date.today(),
        evidence_refs=[{"kind": "url", "ref": f"https://{slug}.example/rates"}],
        agent=agent,
    )
    admission_decide(claim=claim, steward=steward, decision=decision, reason="checked the source")
    thread, _ = thread_events_ingest(
        organisation=organisation,
        agent=agent,
        thread_id=f"T-{slug}",
        events=[
            {
                "id": f"{slug}-evt-1",
                "role": "user",
                "author": member.username,
                "text": "My timezone is CET",
                "time": timezone.now(),
                "place": {"channel": f"D-{slug}", "kind": "dm", "people": [member.username]},
            }
        ],
    )
    thread_consolidate(thread_id=thread.pk)
    return Tenant(organisation, owner, member, agent, token, memory, claim)
