"""ArchivistStore against the real server: the namespace mapping, supersede on put, forget on delete,
search as recall or list, namespaces, ttl, and LangMem's tools running on it unchanged."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from archivist_client import Archivist, Refused
from archivist_langgraph import ArchivistStore, render_hook
from langgraph.store.base import InvalidNamespaceError
from langmem import create_manage_memory_tool, create_search_memory_tool

from memories.models import Memory
from memories.subjects import subject_erase, subject_export

PLACES = {"D-mona": {"kind": "dm", "people": ["mona"]}, "G-team": {"kind": "private", "people": ["mona", "max"]}}


@pytest.fixture
def store(live_api):
    store = ArchivistStore(live_api.url, live_api.token, places=PLACES)
    yield store
    store.client.close()


def test_put_get_supersede_and_delete_map_to_remember_correct_and_forget(store, live_api):
    namespace = ("memories", "D-mona")
    store.put(namespace, "pref", {"content": "Prefers tea"})
    item = store.get(namespace, "pref")
    assert item.value["content"] == "Prefers tea" and item.value["scope"] == "person"
    store.put(namespace, "pref", {"content": "Prefers coffee now"})
    assert store.get(namespace, "pref").value["content"] == "Prefers coffee now"
    versions = Memory.objects.filter(organisation=live_api.organisation).order_by("created_at")
    assert [row.body for row in versions] == ["Prefers tea", "Prefers coffee now"]
    assert versions[0].superseded_by_id == versions[1].pk  # history kept
    store.delete(namespace, "pref")
    assert store.get(namespace, "pref") is None
    assert Memory.objects.get(pk=versions[1].pk).redacted_at is not None


def test_namespaces_choose_scope_person_and_subject(store, live_api):
    # Outside a DM a namespace that does not say whom is refused by the server, naming subject_type.
    with pytest.raises(Refused) as refused:
        store.put(("memories", "G-team"), "k0", {"content": "Mona's dog is called Rex"})
    assert "subject_type" in refused.value.fields
    store.put(("subjects", "G-team", "workspace"), "k1", {"content": "Ships on Fridays"})
    store.put(("memories", "G-team", "person", "mona"), "k2", {"content": "Mona is on call"})
    store.put(("subjects", "G-team", "candidate", "cand-9"), "k3", {"content": "Candidate speaks Dutch"})
    rows = {row.body: row for row in Memory.objects.filter(organisation=live_api.organisation)}
    assert rows["Ships on Fridays"].scope == "channel" and rows["Ships on Fridays"].scope_ref == "G-team"
    assert rows["Mona is on call"].scope == "person" and rows["Mona is on call"].scope_ref == str(live_api.person.pk)
    assert (rows["Candidate speaks Dutch"].subject_type, rows["Candidate speaks Dutch"].subject_id) == (
        "candidate",
        "cand-9",
    )


def test_namespaces_and_values_that_map_to_nothing_are_refused(store):
    with pytest.raises(InvalidNamespaceError, match="maps to nothing"):
        store.put(("notes",), "k", {"content": "x"})
    with pytest.raises(InvalidNamespaceError, match="does not know"):
        store.put(("memories", "C-unknown"), "k", {"content": "x"})
    with pytest.raises(InvalidNamespaceError, match="maps to nothing"):
        store.put(("memories", "G-team", "galaxy"), "k", {"content": "x"})
    with pytest.raises(ValueError, match="does not keep colour"):
        store.put(("memories", "G-team"), "k", {"content": "x", "colour": "blue"})
    store.put(("subjects", "G-team", "workspace"), "structured", {"content": {"food": "tea"}})
    assert json.loads(store.get(("subjects", "G-team", "workspace"), "structured").value["content"]) == {"food": "tea"}


def test_search_recalls_with_a_query_and_lists_without_one(store):
    store.put(("subjects", "G-team", "workspace"), "a", {"content": "The release train leaves on Fridays"})
    store.put(("subjects", "G-team", "workspace"), "b", {"content": "Lunch is at noon"})
    found = store.search(("subjects", "G-team"), query="release train")
    # The suite's server runs without an embedder, so recall answers the place's most recent facts (and says
    # so in its notice); what this checks is that a query goes through recall rather than the listing.
    assert [item.key for item in found] == ["b", "a"]
    listed = store.search(("subjects", "G-team"))
    assert [item.key for item in listed] == ["b", "a"]
    assert [item.key for item in store.search(("subjects", "G-team"), limit=1, offset=1)] == ["a"]


def test_list_namespaces_and_ttl(store, live_api):
    store.put(("subjects", "G-team", "workspace"), "t", {"content": "Expires soon"}, ttl=60)
    row = Memory.objects.get(body="Expires soon")
    assert abs(row.expires_at - (datetime.now(UTC) + timedelta(minutes=60))) < timedelta(minutes=2)
    assert ("subjects", "G-team", "workspace") in store.list_namespaces()
    assert store.list_namespaces(prefix=("memories", "D-mona")) == [("memories", "D-mona")]
    with pytest.raises(ValueError, match="does not extend a memory's expiry"):
        store.get(("subjects", "G-team", "workspace"), "t", refresh_ttl=True)


def test_the_async_batch(store, run_async):
    async def scenario():
        await store.aput(("memories", "D-mona"), "x", {"content": "Async fact"})
        return await store.aget(("memories", "D-mona"), "x"), await store.asearch(("memories", "D-mona"))

    item, found = run_async(scenario())
    assert item.value["content"] == "Async fact" and [i.key for i in found] == ["x"]


def test_langmem_tools_work_unchanged_on_the_store(store, live_api):
    manage = create_manage_memory_tool(namespace=("memories", "{langgraph_user_id}"), store=store)
    search = create_search_memory_tool(namespace=("memories", "{langgraph_user_id}"), store=store)
    config = {"configurable": {"langgraph_user_id": "D-mona"}}
    created = manage.invoke({"content": "Mona's dog is called Rex", "action": "create"}, config)
    memory_id = created.split()[-1]
    found = json.loads(search.invoke({"query": "dog"}, config))
    assert [row["key"] for row in found] == [memory_id] and found[0]["value"]["content"] == "Mona's dog is called Rex"
    manage.invoke({"content": "Mona's dog is called Max", "action": "update", "id": memory_id}, config)
    assert json.loads(search.invoke({"query": "dog"}, config))[0]["value"]["content"] == "Mona's dog is called Max"
    manage.invoke({"action": "delete", "id": memory_id}, config)
    assert json.loads(search.invoke({"query": "dog"}, config)) == []
    # Deleting forgets the whole chain: the original and its update are both receipts now.
    assert Memory.objects.filter(organisation=live_api.organisation, redacted_at__isnull=False).count() == 2


def test_langmem_in_a_channel_files_under_the_namespaces_person_whose_erasure_removes_it(store, live_api):
    namespace = ("memories", "G-team", "person", "{langgraph_user_id}")
    manage = create_manage_memory_tool(namespace=namespace, store=store)
    manage.invoke(
        {"content": "Mona's dog is called Rex", "action": "create"}, {"configurable": {"langgraph_user_id": "mona"}}
    )
    row = Memory.objects.get(body="Mona's dog is called Rex")
    person = str(live_api.person.pk)
    assert (row.scope, row.scope_ref, row.subject_type, row.subject_id) == ("person", person, "user", person)
    mona = {"subject_type": "user", "subject_id": person}
    # Mona's own request (an agent may not make it): her export finds the fact, her erasure empties it.
    assert [memory.pk for memory in subject_export(organisation=live_api.organisation, **mona)] == [row.pk]
    subject_erase(organisation=live_api.organisation, actor=live_api.person, reason="asked", **mona)
    row.refresh_from_db()
    assert row.redacted_at is not None and row.body == ""


def test_the_pre_model_hook_renders_the_block_and_records_the_injection(live_api):
    from langchain_core.messages import HumanMessage, SystemMessage

    with Archivist(live_api.url, live_api.token, place=live_api.dm) as client:
        fact = client.remember(body="Prefers to be called Mo")
        hook = render_hook(client)
        update = hook(
            {"messages": [HumanMessage("What should you call me?")]},
            {"configurable": {"thread_id": "T-7", "turn_id": "lg-turn-1"}},
        )
        system, human = update["llm_input_messages"]
        assert isinstance(system, SystemMessage) and system.content.startswith("<memory>")
        assert "Prefers to be called Mo" in system.content and human.content == "What should you call me?"
        recorded = client.injection("lg-turn-1")
        assert recorded.fact_ids == [fact.id] and recorded.question == "What should you call me?"
