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
        tool, command="create", path="/memories/channel/workspace/standup.md", file_text="Standup at 9\nIn room 2"
    )
    row = Memory.objects.get(source_ref="memtool/G-team/channel/workspace/standup.md")
    assert (row.scope, row.scope_ref, row.body) == ("channel", "G-team", "Standup at 9\nIn room 2")

    listing = run(tool, command="view", path="/memories/channel")
    assert "/memories/channel/workspace/standup.md" in listing and "channel" in listing
    shown = run(tool, command="view", path="/memories/channel/workspace/standup.md")
    assert (
        "about the workspace" in shown
        and "     1\tStandup at 9" in shown
        and "     2\tIn room 2" in shown
        and str(row.pk) in shown
    )
    assert run(tool, command="view", path="/memories").count("/memories/") == 3

    run(tool, command="str_replace", path="/memories/channel/workspace/standup.md", old_str="at 9", new_str="at 10")
    run(
        tool, command="insert", path="/memories/channel/workspace/standup.md", insert_line=1, insert_text="Bring coffee"
    )
    live = Memory.objects.get(source_ref="memtool/G-team/channel/workspace/standup.md", superseded_by__isnull=True)
    assert live.body == "Standup at 10\nBring coffee\nIn room 2"
    assert Memory.objects.filter(source_ref="memtool/G-team/channel/workspace/standup.md").count() == 3  # history kept

    run(
        tool,
        command="rename",
        old_path="/memories/channel/workspace/standup.md",
        new_path="/memories/channel/workspace/daily.md",
    )
    assert "daily.md" in run(tool, command="view", path="/memories/channel/workspace")
    assert "Deleted" in run(tool, command="delete", path="/memories/channel/workspace/daily.md")
    assert run(tool, command="view", path="/memories/channel") == "Directory /memories/channel is empty."


def test_what_cannot_map_is_refused_with_a_message_the_model_can_act_on(tool):
    with pytest.raises(ToolError, match="Split it into several files"):
        run(tool, command="create", path="/memories/channel/workspace/long.md", file_text="x" * 2001)
    with pytest.raises(ToolError, match="kept in /memories/channel"):
        run(tool, command="create", path="/memories/workspace/all.md", file_text="Everyone")
    run(tool, command="create", path="/memories/channel/workspace/a.md", file_text="A fact")
    with pytest.raises(ToolError, match="scope cannot change"):
        run(tool, command="rename", old_path="/memories/channel/workspace/a.md", new_path="/memories/person/a.md")
    with pytest.raises(ToolError, match="subject cannot change"):
        run(
            tool,
            command="rename",
            old_path="/memories/channel/workspace/a.md",
            new_path="/memories/channel/user:mona/a.md",
        )
    with pytest.raises(ToolError, match="Paths start with /memories"):
        run(tool, command="view", path="/etc/passwd")
    with pytest.raises(ToolError, match="not found"):
        run(tool, command="str_replace", path="/memories/channel/workspace/a.md", old_str="nothing", new_str="x")
    with pytest.raises(ToolError, match="no file"):
        run(tool, command="delete", path="/memories/channel/missing.md")


def test_a_file_says_whom_it_is_about_by_its_path_or_is_refused(tool, live_api):
    # Outside a DM the tool never chooses whom a fact is about: a file outside a subject folder is refused.
    with pytest.raises(ToolError, match="subject_type: say whom this file is about"):
        run(tool, command="create", path="/memories/channel/dog.md", file_text="Mona's dog is called Rex")
    with pytest.raises(ToolError, match="person file names its person"):
        run(tool, command="create", path="/memories/person/dog.md", file_text="Mona's dog is called Rex")
    assert not Memory.objects.exists()
    run(tool, command="create", path="/memories/person/mona/dog.md", file_text="Mona's dog is called Rex")
    run(tool, command="create", path="/memories/channel/candidate:cand-3/lang.md", file_text="Speaks Dutch")
    dog, dutch = Memory.objects.get(body="Mona's dog is called Rex"), Memory.objects.get(body="Speaks Dutch")
    person = str(live_api.person.pk)
    assert (dog.scope, dog.scope_ref, dog.subject_type, dog.subject_id) == ("person", person, "user", person)
    assert (dutch.scope, dutch.subject_type, dutch.subject_id) == ("channel", "candidate", "cand-3")
