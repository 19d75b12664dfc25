"""The administrator's setup script: names checked before anything is printed. (Run against a real server by
tests/test_deploying_guide.py, where the application's roles then hold no privilege beyond logging in.)"""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command


def printed(*args: str) -> str:
    out = StringIO()
    call_command("database_setup_sql", *args, stdout=out)
    return out.getvalue()


def test_the_script_creates_the_roles_the_database_and_pgvector_for_the_names_given():
    script = printed("--owner", "mem_owner", "--web-user", "mem_web", "--database", "memdb")
    assert "CREATE ROLE mem_owner LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS NOREPLICATION;" in script
    assert "GRANT archivist_maintenance TO mem_owner;" in script
    assert "GRANT archivist_app TO mem_web;" in script
    assert "CREATE DATABASE memdb OWNER mem_owner" in script
    assert "CREATE EXTENSION IF NOT EXISTS vector;" in script


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (("--owner", 'x"; DROP ROLE postgres; --'), "--owner"),
        (("--web-user", "Web-User"), "--web-user"),
        (("--database", "a" * 64), "--database"),
    ],
)
def test_a_name_that_is_not_a_plain_identifier_is_refused_naming_the_option(args, named):
    with pytest.raises(CommandError, match=f"^{named} must be a lowercase PostgreSQL name of at most 63"):
        printed(*args)


def test_the_owner_and_the_web_user_are_two_roles_other_than_the_application_roles():
    with pytest.raises(CommandError, match="two different roles"):
        printed("--owner", "same", "--web-user", "same")
    with pytest.raises(CommandError, match="neither archivist_app nor archivist_maintenance"):
        printed("--web-user", "archivist_app")
