"""ArchivistMemoryTool, the backend for Anthropic's memory tool, against the real server: each command as
the model would send it (the tool's own `call`), no model needed."""

from __future__ import annotations

import pytest
from anthropic.lib.tools import ToolError
from archivist_client.anthropic import ArchivistMemoryTool

from memories.models import Memory


@pytest.fixture
def tool(live_api):
    return ArchivistMemoryTool(place=live_api.team, base_url=live_api.url, token=live_api.token)


def run(tool, **command):
    return tool.call(command)


def test_create_view_edit_rename_and_delete_map_to_memories(tool, live_api):
    assert "created" in run(
        tool, command="create", path="/memories/channel/standup.md", file_text="Standup at 9\nIn room 2"
    )
    row = Memory.objects.get(source_ref="memtool/G-team/channel/standup.md")
    assert (row.scope, row.scope_ref, row.body) == ("channel", "G-team", "Standup at 9\nIn room 2")

    listing = run(tool, command="view", path="/memories/channel")
    assert "/memories/channel/standup.md" in listing and "channel" in listing
    shown = run(tool, command="view", path="/memories/channel/standup.md")
    assert "     1\tStandup at 9" in shown and "     2\tIn room 2" in shown and str(row.pk) in shown
    assert run(tool, command="view", path="/memories").count("/memories/") == 3

    run(tool, command="str_replace", path="/memories/channel/standup.md", old_str="at 9", new_str="at 10")
    run(tool, command="insert", path="/memories/channel/standup.md", insert_line=1, insert_text="Bring coffee")
    live = Memory.objects.get(source_ref="memtool/G-team/channel/standup.md", superseded_by__isnull=True)
    assert live.body == "Standup at 10\nBring coffee\nIn room 2"
    assert Memory.objects.filter(source_ref="memtool/G-team/channel/standup.md").count() == 3  # history kept

    run(tool, command="rename", old_path="/memories/channel/standup.md", new_path="/memories/channel/daily.md")
    assert "daily.md" in run(tool, command="view", path="/memories/channel")
    assert "Deleted" in run(tool, command="delete", path="/memories/channel/daily.md")
    assert run(tool, command="view", path="/memories/channel") == "Directory /memories/channel is empty."


def test_what_cannot_map_is_refused_with_a_message_the_model_can_act_on(tool):
    with pytest.raises(ToolError, match="Split it into several files"):
        run(tool, command="create", path="/memories/channel/long.md", file_text="x" * 2001)
    with pytest.raises(ToolError, match="kept in /memories/channel"):
        run(tool, command="create", path="/memories/workspace/all.md", file_text="Everyone")
    run(tool, command="create", path="/memories/channel/a.md", file_text="A fact")
    with pytest.raises(ToolError, match="scope cannot change"):
        run(tool, command="rename", old_path="/memories/channel/a.md", new_path="/memories/person/a.md")
    with pytest.raises(ToolError, match="Paths start with /memories"):
        run(tool, command="view", path="/etc/passwd")
    with pytest.raises(ToolError, match="not found"):
        run(tool, command="str_replace", path="/memories/channel/a.md", old_str="nothing", new_str="x")
    with pytest.raises(ToolError, match="no file"):
        run(tool, command="delete", path="/memories/channel/missing.md")
