"""The rules extractor on real phrasing: what it learns, and what it must leave alone."""

from __future__ import annotations

import pytest

from threads.extractors.base import ABOUT_AUTHOR, ABOUT_WORKSPACE, EventView
from threads.extractors.rules import RulesExtractor, third_person, verb_third_person

MONA = "7d2f5c9e-0b3c-4c1a-a1a2-2f3b4c5d6e7f"


def said(text: str, *, role: str = "user", author: str = "mona", author_id: str | None = MONA, sequence: int = 1):
    return EventView(sequence=sequence, role=role, author=author, author_id=author_id, text=text)


def learn(text: str, **kwargs):
    return RulesExtractor().extract([said(text, **kwargs)])


def only(text: str, **kwargs):
    found = learn(text, **kwargs)
    assert len(found) == 1, f"{text!r} gave {found}"
    return found[0]


@pytest.mark.parametrize(
    ("text", "body", "key"),
    [
        ("Call me Mo.", "mona wants to be called Mo", "called"),
        ("Please just call me Mo from now on", "mona wants to be called Mo", "called"),
        ("you can call me Dr. Okafor", "mona wants to be called Dr. Okafor", "called"),
        ("My timezone is CET.", "mona's timezone is CET", "my:timezone"),
        ("my manager is Priya Shah", "mona's manager is Priya Shah", "my:manager"),
        ("My kids are Sam and Lee", "mona's kids are Sam and Lee", "my:kids"),
        ("I prefer tea to coffee", "mona prefers tea to coffee", "prefers:tea to coffee"),
        ("I'd prefer short answers, please", "mona prefers short answers", None),
        ("My timezone is CET, by the way", "mona's timezone is CET", "my:timezone"),
        ("My favourite band is Low, they are so calm", "mona's favourite band is Low", "my:favourite band"),
        ("My hobby is hiking in the hills", "mona's hobby is hiking in the hills", "my:hobby"),
        ("I'd rather get a summary than the full log", "mona would rather get a summary than the full log", None),
        ("I really prefer meetings after 10am!", "mona prefers meetings after 10am", None),
        ("Remember that I'm allergic to peanuts", "mona is allergic to peanuts", None),
        (
            "Please remember that my flight lands at 6pm",
            "mona's flight lands at 6pm",
            "note:mona's flight lands at 6pm",
        ),
        ("Remember that I work from Lisbon on Fridays.", "mona works from Lisbon on Fridays", None),
        ("remember: the deploy freeze starts on Friday", "The deploy freeze starts on Friday", None),
        ("Don't forget that the office closes at 6 on Fridays", "The office closes at 6 on Fridays", None),
        ("From now on, reply in French", "From now on, reply in French (asked by mona)", None),
        ("Reply with bullet points from now on.", "From now on, reply with bullet points (asked by mona)", None),
        ("From now on, call me Mo", "mona wants to be called Mo", "called"),
    ],
)
def test_explicit_statements_become_candidates(text, body, key):
    found = learn(text)
    assert len(found) == 1, f"{text!r} gave {found}"
    assert found[0].body == body
    if key is not None:
        assert found[0].key == key
    assert found[0].sequences == (1,)


def test_a_fact_about_the_speaker_is_about_them_and_a_workspace_fact_about_no_one():
    mine = only("My timezone is CET")
    assert (mine.about, mine.author_id) == (ABOUT_AUTHOR, MONA)
    assert mine.exclusive and mine.tier == "profile"
    shared = only("Remember that the standup moved to 9:30")
    assert (shared.about, shared.author_id) == (ABOUT_WORKSPACE, None)


@pytest.mark.parametrize(
    "text",
    [
        # Questions, with or without the question mark
        "Do you remember that I prefer tea?",
        "What's my timezone?",
        "Can you call me tomorrow?",
        "is my timezone CET",
        "Should I call me Mo",
        "Do you know what I prefer",
        "Would you remember that my flight is at 6?",
        # Hypotheticals
        "If my name were Bob, would you treat me differently?",
        "Suppose I prefer tea, what then.",
        "Imagine my timezone is PST.",
        "Hypothetically, call me Captain.",
        "Let's say my budget is 5k.",
        "Maybe I prefer coffee.",
        "I wish my manager was Priya.",
        "I might prefer the blue one.",
        # Quoted and reported speech
        'My sister always says "call me Kiki".',
        "He wrote “my timezone is PST” in the doc.",
        "> My timezone is PST",
        "Bob said that my timezone is PST",
        "The customer told me they prefer email",
        "My boss thinks I prefer mornings",
        "Remember that the client said the deadline is Friday",
        "Her message was 'I prefer tea'",
        # Ways of talking, not facts
        "My point is that we need more tests",
        "My question is about the invoice",
        "My guess is Thursday",
        "My day is going well",
        "Call me back when you can",
        "call me crazy, but this works",
        "Call me at 5",
        "Remember to buy milk",
        "Note to self",
        # Encouragement and plans, not facts
        "Remember, just do it!",
        "Remember Sam, keep going",
        "And remember, I'm always here for you.",
        "My hard work is paying off",
        "My project is going well, thanks",
        "But I'll also start a journal from now on.",
        # Not the speaker's words
        "I prefer tea",  # role assistant, below
    ],
)
def test_phrasing_that_must_not_become_a_memory(text):
    role = "assistant" if text == "I prefer tea" else "user"
    assert learn(text, role=role) == [], text


def test_nothing_personal_is_learned_about_an_author_who_is_not_an_account():
    assert learn("Call me Mo", author="guest-42", author_id=None) == []
    assert learn("My timezone is CET", author="guest-42", author_id=None) == []
    # A workspace fact does not need the author to be an account holder.
    assert only("Remember that the office closes at 6", author="guest-42", author_id=None).about == ABOUT_WORKSPACE


@pytest.mark.parametrize(
    ("text", "body", "retracts"),
    [
        ("I'm not vegetarian anymore", "mona is no longer vegetarian", "is vegetarian"),
        ("I am no longer on the infra team", "mona is no longer on the infra team", "is on the infra team"),
        ("I don't drink coffee anymore", "mona no longer drinks coffee", "drinks coffee"),
        ("I no longer work at Initech", "mona no longer works at Initech", "works at Initech"),
        ("My manager is not Bob anymore", "mona's manager is no longer Bob", "Bob"),
        ("my manager is no longer Bob", "mona's manager is no longer Bob", "Bob"),
        ("I don't prefer tea anymore", "mona no longer prefers tea", "tea"),
        ("Don't call me Bobby", "mona does not want to be called Bobby", "Bobby"),
        ("Not vegetarian anymore.", "mona is no longer vegetarian", "is vegetarian"),
    ],
)
def test_negations_retract(text, body, retracts):
    candidate = only(text)
    assert candidate.negated
    assert candidate.body == body
    assert candidate.retracts == retracts
    assert not candidate.exclusive


@pytest.mark.parametrize(
    "text",
    ["Actually, I prefer coffee", "No, I prefer coffee", "I prefer coffee, actually", "Now I prefer coffee"],
)
def test_corrections_are_marked_so_they_replace_the_newest_fact_of_their_kind(text):
    candidate = only(text)
    assert candidate.correction and candidate.family == "prefers"
    assert candidate.body == "mona prefers coffee"


def test_plain_negations_without_a_change_are_not_retractions():
    assert learn("I'm not sure") == []
    assert learn("I don't know") == []
    assert learn("I don't like it") == []


def test_each_sentence_of_a_message_is_read_on_its_own():
    found = learn(
        "Hi! Call me Mo. My timezone is CET; is yours? Also, what if my budget is 5k?\nRemember that I prefer tea."
    )
    assert [c.body for c in found] == [
        "mona wants to be called Mo",
        "mona's timezone is CET",
        "mona prefers tea",
    ]


def test_events_of_the_agent_tools_and_system_teach_nothing():
    events = [
        said("Call me Mo", role="assistant", sequence=1),
        said("My timezone is CET", role="tool", sequence=2),
        said("Remember that the freeze starts Friday", role="system", sequence=3),
    ]
    assert RulesExtractor().extract(events) == []


def test_third_person_conjugates_the_verb_after_i():
    assert third_person("I work from home", "mona") == "mona works from home"
    assert third_person("I usually watch the news", "mona") == "mona usually watches the news"
    assert third_person("I am allergic to my cat", "mona") == "mona is allergic to mona's cat"
    assert third_person("I have two kids", "mona") == "mona has two kids"
    assert third_person("I can read Spanish", "mona") == "mona can read Spanish"
    assert third_person("you should email me", "mona") == "the agent should email mona"
    assert [verb_third_person(v) for v in ("study", "play", "go", "fix", "walked")] == [
        "studies",
        "plays",
        "goes",
        "fixes",
        "walked",
    ]
