from datetime import timedelta

from django.core.management import call_command

from accounts.models import AgentToken, hash_token


def test_only_the_hash_of_a_token_is_stored(agent_with_token):
    agent, raw = agent_with_token
    token = AgentToken.objects.get(agent=agent)
    assert token.token_hash == hash_token(raw)
    assert raw not in {token.token_hash, token.hint}
    assert raw.startswith(token.hint)


def test_revoked_and_expired_tokens_are_not_usable(agent):
    token, _ = AgentToken.issue(agent=agent)
    assert AgentToken.objects.usable().filter(pk=token.pk).exists()
    token.revoke()
    assert not AgentToken.objects.usable().filter(pk=token.pk).exists()
    expired, _ = AgentToken.issue(agent=agent, lifetime=timedelta(seconds=-1))
    assert not AgentToken.objects.usable().filter(pk=expired.pk).exists()


def test_create_agent_prints_the_token_alone_on_its_last_line(org, capsys):
    call_command("create_agent", "scribe", "--org", org.slug)
    last_line = capsys.readouterr().out.strip().splitlines()[-1]
    assert AgentToken.objects.filter(token_hash=hash_token(last_line)).exists()


def test_ensure_admin_creates_one_administrator_once(db, capsys):
    call_command("ensure_admin")
    first = capsys.readouterr().out
    assert "password" in first
    call_command("ensure_admin")
    assert capsys.readouterr().out == ""
