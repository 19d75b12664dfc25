"""Lexical and semantic search, the filters, pagination and the empty states of "My memories"."""

from __future__ import annotations

from datetime import timedelta

from django.test import override_settings
from django.urls import reverse
from django.utils import timezone

from memories.embeddings import embedders
from memories.models import Memory, Tier
from memories.services import memory_set_pinned
from web.tests.factories import person_fact


def listed(client, **params) -> list[Memory]:
    response = client.get(reverse("web:memory-list"), params)
    assert response.status_code == 200, response.content.decode()[:2000]
    return list(response.context["search"].page.object_list)


def test_a_search_matches_words_in_any_form(client, member, seeded):
    client.force_login(member)
    assert listed(client, q="meeting") == [seeded.person_fact]  # stemmed: "meetings"
    assert listed(client, q="release thursday") == [seeded.workspace]
    assert listed(client, q="lisbon") == []  # another person's fact


def test_a_search_that_finds_nothing_says_so(client, member, seeded):
    client.force_login(member)
    page = client.get(reverse("web:memory-list"), {"q": "zeppelin"}).content.decode()
    assert "Nothing matches" in page and "Nothing is remembered yet" not in page


def test_filters_narrow_by_bucket_scope_tier_and_pinned(client, org, member, seeded):
    client.force_login(member)
    note = person_fact(organisation=org, person=member, body="Mentioned a cold", tier=Tier.NOTE)
    memory_set_pinned(memory=seeded.channel, pinned=True, actor=member)
    assert set(listed(client, bucket="user")) == {seeded.forgettable, note}
    assert set(listed(client, scope="channel")) == {seeded.channel}
    assert set(listed(client, scope="person", bucket="learned")) == {seeded.person_fact}
    assert listed(client, tier="note") == [note]
    assert listed(client, pinned="yes") == [seeded.channel]
    assert seeded.channel not in listed(client, pinned="no")
    assert listed(client)[0] == seeded.channel  # pinned first


def test_expired_memories_are_hidden_unless_asked_for(client, org, member, seeded):
    client.force_login(member)
    old = person_fact(organisation=org, person=member, body="Was on holiday in March")
    Memory.objects.filter(pk=old.pk).update(expires_at=timezone.now() - timedelta(days=1))
    assert old not in listed(client)
    assert listed(client, expired="expired") == [old]
    assert old in listed(client, expired="all") and seeded.workspace in listed(client, expired="all")


def test_corrected_and_erased_versions_leave_the_list(client, member, seeded):
    client.force_login(member)
    client.post(reverse("web:memory-correct", args=[seeded.person_fact.pk]), {"body": "Prefers afternoons"})
    client.post(reverse("web:memory-forget", args=[seeded.forgettable.pk]), {"reason": "done"})
    bodies = [memory.body for memory in listed(client, expired="all")]
    assert "Prefers afternoons" in bodies
    assert "Prefers morning meetings before ten" not in bodies and "" not in bodies


def test_the_list_is_paginated_twenty_a_page(client, org, member):
    for number in range(23):
        person_fact(organisation=org, person=member, body=f"Numbered fact {number}")
    client.force_login(member)
    first = listed(client)
    second = listed(client, page=2)
    assert len(first) == 20 and len(second) == 3
    assert not {memory.pk for memory in first} & {memory.pk for memory in second}
    page = client.get(reverse("web:memory-list"), {"page": 2, "scope": "person"}).content.decode()
    assert "page=1" in page and "scope=person" in page


@override_settings(EMBEDDER="local")
def test_a_search_by_meaning_ranks_by_closeness_and_names_rows_not_yet_embedded(client, org, member):
    embedder = embedders.get_embedder()
    bodies = ["Drinks green tea every afternoon", "Owns a red bicycle", "Keeps bees on the roof"]
    rows = [person_fact(organisation=org, person=member, body=body) for body in bodies]
    for row, vector in zip(rows, embedder.embed(bodies), strict=True):
        Memory.objects.filter(pk=row.pk).update(embedding=vector, embedding_model=embedder.name)
    not_embedded = person_fact(organisation=org, person=member, body="Speaks Welsh")
    client.force_login(member)

    response = client.get(reverse("web:memory-list"), {"q": "favourite hot beverage", "mode": "meaning"})
    search = response.context["search"]
    assert search.ranking == "meaning"
    results = list(search.page.object_list)
    assert results[0].pk == rows[0].pk and not_embedded not in results
    assert "1 of the memories that match your filters are not embedded yet" in response.content.decode()


@override_settings(EMBEDDER="none")
def test_a_search_by_meaning_without_an_embedder_falls_back_to_words_and_says_so(client, member, seeded):
    client.force_login(member)
    response = client.get(reverse("web:memory-list"), {"q": "thursdays", "mode": "meaning"})
    assert response.context["search"].ranking == "words"
    assert list(response.context["search"].page.object_list) == [seeded.workspace]
    assert "no embedder is configured" in response.content.decode()
