"""Setting the tenant for one transaction.

Everything here uses `set_config(name, value, true)`, PostgreSQL's SET LOCAL:
the value lasts until the transaction ends, commit or rollback, so a pooled
connection cannot carry one request's tenant into the next one. That is why
each call insists on an open transaction.
"""

from __future__ import annotations

from django.db import connections

from tenancy.sql import CROSS_TENANT_SETTING, OPERATOR, STEWARD, TENANT_SETTING, TOKEN_HASH_SETTING

CROSS_TENANT_VALUES = ("", STEWARD, OPERATOR)


class TenancyError(RuntimeError):
    """The tenant was set outside a transaction, where SET LOCAL would not hold."""


def _cursor(using: str):
    connection = connections[using]
    if not connection.in_atomic_block:
        raise TenancyError("The tenant is set per transaction; call this inside transaction.atomic().")
    return connection.cursor()


def tenant_activate(*, organisation_id, cross_tenant: str = "", using: str = "default") -> None:
    """Name the organisation (and any documented cross-tenant exception) this transaction acts for."""
    if cross_tenant not in CROSS_TENANT_VALUES:
        raise ValueError(f"cross_tenant must be one of {CROSS_TENANT_VALUES}, not {cross_tenant!r}")
    with _cursor(using) as cursor:
        cursor.execute(
            "SELECT set_config(%s, %s, true), set_config(%s, %s, true)",
            [TENANT_SETTING, str(organisation_id or ""), CROSS_TENANT_SETTING, cross_tenant],
        )


def token_lookup_activate(*, token_hash: str, using: str = "default") -> None:
    """Let this transaction read the one agent token with this hash, before its tenant is known."""
    with _cursor(using) as cursor:
        cursor.execute("SELECT set_config(%s, %s, true)", [TOKEN_HASH_SETTING, token_hash])


def active_tenant(using: str = "default") -> str:
    """The organisation id this transaction acts for, or "" when none is set."""
    with connections[using].cursor() as cursor:
        cursor.execute("SELECT COALESCE(current_setting(%s, true), '')", [TENANT_SETTING])
        return cursor.fetchone()[0]
