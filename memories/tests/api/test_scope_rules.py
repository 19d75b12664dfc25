"""The scope rules, as properties: no generated place recalls a person fact outside that person's DM,
nor a channel fact outside its channel; writes go to the narrowest scope; seeing and changing follow."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import example, given
from hypothesis import strategies as st

from memories.scopes import (
    Place,
    Viewer,
    changeable_by,
    recallable,
    scope_for,
    solo_person,
    subject_request_allowed,
    visible_to,
)

PEOPLE = ["p1", "p2", "p3"]
CHANNELS = ["c1", "c2", "d1"]


@dataclass
class Row:
    scope: str
    scope_ref: str
    owner_id: str | None = None
    agent_id: str | None = None
    bucket: str = "learned"


places = st.builds(
    Place,
    channel=st.sampled_from(CHANNELS),
    kind=st.sampled_from(["dm", "private", "public"]),
    people=st.lists(st.sampled_from(PEOPLE), max_size=3).map(tuple),
)
rows = st.one_of(
    st.builds(Row, scope=st.just("workspace"), scope_ref=st.just("")),
    st.builds(Row, scope=st.just("channel"), scope_ref=st.sampled_from(CHANNELS)),
    st.builds(Row, scope=st.just("person"), scope_ref=st.sampled_from(PEOPLE)),
)
# Examples inside each property's branch, so every property checks its claim at least once; the
# control test below fails if one of them stops reaching its branch.
PERSON_FACT = Row("person", "p1")
CHANNEL_FACT = Row("channel", "c1")
WORKSPACE_FACT = Row("workspace", "")
P1_DM = Place(channel="d1", kind="dm", people=("p1",))
IN_C1 = Place(channel="c1", kind="private", people=("p1", "p2"))
P1_IN_C1 = Viewer(user_id="p1", is_owner=False, channels=frozenset({"c1"}))
OWNER_OUTSIDE = Viewer(user_id="p2", is_owner=True, channels=frozenset())

viewers = st.builds(
    Viewer,
    user_id=st.sampled_from(PEOPLE),
    is_owner=st.booleans(),
    channels=st.frozensets(st.sampled_from(CHANNELS)),
)


@given(row=rows, place=places)
@example(row=PERSON_FACT, place=P1_DM)
def test_no_place_recalls_a_person_fact_outside_that_persons_dm(row, place):
    if row.scope == "person" and recallable(row, place):
        assert place.kind == "dm" and set(place.people) == {row.scope_ref}


@given(row=rows, place=places)
@example(row=CHANNEL_FACT, place=IN_C1)
def test_no_place_recalls_a_channel_fact_outside_its_channel(row, place):
    if row.scope == "channel" and recallable(row, place):
        assert place.channel == row.scope_ref


@given(place=places)
def test_workspace_facts_are_recalled_anywhere_and_system_claims_nowhere(place):
    assert recallable(Row("workspace", ""), place)
    assert not recallable(Row("workspace", "", bucket="system"), place)


@given(place=places, wanted=st.sampled_from([None, "workspace", "channel", "person"]))
def test_a_write_goes_to_the_narrowest_scope_the_place_allows(place, wanted):
    choice = scope_for(place, wanted)
    if choice.scope == "workspace":
        assert place.kind == "public" and wanted == "workspace"
    if choice.scope == "person":
        assert solo_person(place) == choice.ref
    # Whatever is written here can be recalled here: nothing is lost to a scope the place cannot read.
    assert recallable(Row(choice.scope, choice.ref), place)
    assert (choice.reason == "") == choice.honours(wanted) or wanted is None


@given(place=places, person=st.sampled_from(PEOPLE), wanted=st.sampled_from([None, "workspace", "channel"]))
def test_only_for_always_keeps_a_fact_for_that_person(place, person, wanted):
    choice = scope_for(place, wanted, only_for=person)
    assert (choice.scope, choice.ref) == ("person", person)


@given(row=rows, viewer=viewers)
@example(row=PERSON_FACT, viewer=P1_IN_C1)
def test_a_persons_facts_are_seen_only_by_them_not_by_owners(row, viewer):
    if row.scope == "person" and visible_to(row, viewer):
        assert viewer.user_id == row.scope_ref


@given(row=rows, viewer=viewers)
@example(row=WORKSPACE_FACT, viewer=OWNER_OUTSIDE)
def test_changing_needs_seeing_and_workspace_facts_need_an_owner(row, viewer):
    if changeable_by(row, viewer):
        assert visible_to(row, viewer)
        if row.scope == "workspace":
            assert viewer.is_owner


@given(row=rows, viewer=viewers)
@example(row=CHANNEL_FACT, viewer=P1_IN_C1)
def test_a_channel_fact_is_seen_by_the_channels_members(row, viewer):
    if row.scope == "channel" and row.owner_id is None:
        assert visible_to(row, viewer) == (row.scope_ref in viewer.channels)


@given(row=rows, place=st.one_of(st.none(), places), held=st.sampled_from([None, "a1", "a2"]))
def test_an_agent_sees_what_it_holds_shared_workspace_facts_and_what_its_place_recalls(row, place, held):
    row.agent_id = held
    agent = Viewer(agent_id="a1", place=place)
    if visible_to(row, agent):
        assert held == "a1" or (held is None and (row.scope == "workspace" or recallable(row, place)))
    if changeable_by(row, agent):
        assert held == "a1" or row.scope != "workspace"


def test_the_examples_reach_the_branches_their_properties_check():
    assert PERSON_FACT.scope == "person" and recallable(PERSON_FACT, P1_DM)
    assert recallable(CHANNEL_FACT, IN_C1)
    assert visible_to(PERSON_FACT, P1_IN_C1)
    assert changeable_by(WORKSPACE_FACT, OWNER_OUTSIDE)
    assert visible_to(CHANNEL_FACT, P1_IN_C1) and not visible_to(CHANNEL_FACT, OWNER_OUTSIDE)


def test_subject_requests_follow_whose_data_it_is():
    mona = Viewer(user_id="p1")
    owner = Viewer(user_id="p2", is_owner=True)
    agent = Viewer(agent_id="a1")
    assert subject_request_allowed(viewer=mona, subject_type="user", subject_id="p1", action="export")
    assert not subject_request_allowed(viewer=owner, subject_type="user", subject_id="p1", action="export")
    assert subject_request_allowed(viewer=owner, subject_type="user", subject_id="p1", action="erase")
    assert not subject_request_allowed(viewer=agent, subject_type="user", subject_id="p1", action="erase")
    assert subject_request_allowed(viewer=agent, subject_type="candidate", subject_id="c", action="export")
    assert not subject_request_allowed(viewer=mona, subject_type="candidate", subject_id="c", action="erase")
