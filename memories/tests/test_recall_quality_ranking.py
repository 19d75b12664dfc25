"""memories.recall.ranking: each rule of contextual ranking, alone, on hand-made candidates."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memories.recall import ranking
from memories.recall.ranking import RankedRow, RankingConfig

DAY = datetime(2026, 3, 10, 12, tzinfo=UTC)


def candidate(key: str, body: str, *, similarity=0.2, counts=None, when=DAY, neighbours=()) -> RankedRow:
    return RankedRow(
        id=key,
        body=body,
        when=when,
        similarity=similarity,
        lexeme_counts=dict(counts or {}),
        length=float(len(body.split())),
        neighbours=list(neighbours),
    )


def background(n: int = 20) -> list[RankedRow]:
    """Unrelated facts, so the pool's scores have the spread a real candidate pool has."""
    return [candidate(f"bg{i}", f"Unrelated fact {i}", similarity=0.05 + 0.01 * i) for i in range(n)]


def parts_of(fact: RankedRow, question: str) -> dict[str, float]:
    """The parts of a fact's score, ranked alone among the background for `question`."""
    ordered = ranking.rank(
        [fact] + background(),
        cues=ranking.analyse_question(question),
        document_frequency={},
        total=100,
        average_length=8.0,
    )
    return next(c for c in ordered if c.id == fact.id).parts


def parts_by_id(candidates, question: str, config=ranking.DEFAULT_CONFIG, df=None) -> dict[str, dict[str, float]]:
    """Each candidate's score parts, ranked among the background for `question`."""
    ordered = ranking.rank(
        candidates + background(),
        cues=ranking.analyse_question(question),
        document_frequency=df or {},
        total=100,
        average_length=8.0,
        config=config,
    )
    return {c.id: c.parts for c in ordered if not c.id.startswith("bg")}


def ranked_ids(candidates, question="", config=ranking.DEFAULT_CONFIG, df=None, total=100) -> list[str]:
    ordered = ranking.rank(
        candidates + background(),
        cues=ranking.analyse_question(question),
        document_frequency=df or {},
        total=total,
        average_length=8.0,
        config=config,
    )
    return [c.id for c in ordered if not c.id.startswith("bg")]


def test_bm25_prefers_the_rare_word_over_the_common_one():
    docs = [{"adopt": 1}, {"caroline": 1}]
    scores = ranking.bm25_scores(
        docs, [8, 8], document_frequency={"adopt": 2, "caroline": 60}, total=100, average_length=8.0
    )
    assert scores[0] > scores[1] > 0


def test_bm25_saturates_repeats_and_penalises_long_facts():
    frequency = {"tea": 5}
    repeated, once = ranking.bm25_scores(
        [{"tea": 10}, {"tea": 1}], [8, 8], document_frequency=frequency, total=100, average_length=8.0
    )
    assert repeated < 10 * once
    short, long = ranking.bm25_scores(
        [{"tea": 1}, {"tea": 1}], [4, 40], document_frequency=frequency, total=100, average_length=8.0
    )
    assert short > long


def test_bm25_ignores_words_no_fact_here_holds():
    assert ranking.bm25_scores([{"ghost": 3}], [5], document_frequency={"ghost": 0}, total=10, average_length=5) == [
        0.0
    ]


def test_zscores_put_a_missing_value_at_the_floor():
    scores = ranking.zscores([1.0, 3.0, None])
    assert scores[0] == scores[2] < scores[1]
    assert ranking.zscores([None, None]) == [0.0, 0.0]


@pytest.mark.parametrize(
    ("question", "start", "end"),
    [
        (
            "What did she paint on October 13, 2023?",
            datetime(2023, 10, 13, tzinfo=UTC),
            datetime(2023, 10, 14, tzinfo=UTC),
        ),
        ("What happened on 1 February, 2023?", datetime(2023, 2, 1, tzinfo=UTC), datetime(2023, 2, 2, tzinfo=UTC)),
        ("Who came in December 2023?", datetime(2023, 12, 1, tzinfo=UTC), datetime(2024, 1, 1, tzinfo=UTC)),
        ("Any news from Sept 2024?", datetime(2024, 9, 1, tzinfo=UTC), datetime(2024, 10, 1, tzinfo=UTC)),
        ("What shipped on 2025-06-30?", datetime(2025, 6, 30, tzinfo=UTC), datetime(2025, 7, 1, tzinfo=UTC)),
    ],
)
def test_a_named_day_or_month_becomes_a_period(question, start, end):
    assert ranking.named_period(question) == (start, end)


def test_no_period_without_a_calendar_date():
    assert ranking.named_period("What did she paint last May?") is None
    assert ranking.named_period("What happened on February 30, 2023?") is None


def test_a_speaker_label_is_read_from_a_transcript_line():
    assert ranking.speaker_of("Mona: see you at ten") == "Mona"
    assert ranking.speaker_of("Mona Lisa: hello") == "Mona Lisa"
    assert ranking.speaker_of("The deadline: Friday") is None
    assert ranking.speaker_of("no label here") is None


def test_a_fact_is_lifted_by_the_neighbour_that_matches_the_question():
    prompt = candidate("prompt", "Max: what have you been researching?", similarity=0.8, neighbours=[("answer", 1)])
    answer = candidate("answer", "Mona: adoption agencies, mostly", similarity=0.3, neighbours=[("prompt", -1)])
    other = candidate("other", "Mona: the weather is lovely", similarity=0.45)
    question = "What did Mona research?"
    assert ranked_ids([prompt, answer, other], question).index("answer") < ranked_ids(
        [prompt, answer, other], question
    ).index("other")
    assert ranked_ids([prompt, answer, other], question, RankingConfig().without("context")).index("answer") == 2


def test_a_neighbour_beyond_the_window_does_not_count():
    prompt = candidate("prompt", "Max: what have you been researching?", similarity=0.8, neighbours=[("far", 3)])
    far = candidate("far", "Mona: adoption agencies", similarity=0.3, neighbours=[("prompt", -3)])
    other = candidate("other", "Mona: the weather is lovely", similarity=0.45)
    assert ranked_ids([prompt, far, other]) == ["prompt", "other", "far"]


def test_the_speaker_named_in_the_question_is_preferred():
    mona = candidate("mona", "Mona: I painted a lake", similarity=0.5)
    max_ = candidate("max", "Max: I painted a lake", similarity=0.5)
    assert ranked_ids([max_, mona], "What did Mona paint?") == ["mona", "max"]
    assert ranked_ids([mona, max_], "What did Max paint?") == ["max", "mona"]


def test_no_speaker_is_preferred_when_the_question_names_two():
    mona = candidate("mona", "Mona: I painted a lake", similarity=0.5)
    max_ = candidate("max", "Max: I painted a lake", similarity=0.5)
    ordered = ranking.rank(
        [max_, mona],
        cues=ranking.analyse_question("What did Mona and Max both paint?"),
        document_frequency={},
        total=10,
        average_length=5,
    )
    assert all("speaker" not in c.parts for c in ordered)


def test_a_named_month_prefers_facts_from_it_or_shortly_after():
    june = candidate("june", "Mona: we went camping", similarity=0.5, when=datetime(2023, 6, 20, tzinfo=UTC))
    early_july = candidate("july", "Mona: we went camping", similarity=0.5, when=datetime(2023, 7, 10, tzinfo=UTC))
    march = candidate("march", "Mona: we went camping", similarity=0.6, when=datetime(2023, 3, 2, tzinfo=UTC))
    order = ranked_ids([march, early_july, june], "Where did Mona go camping in June 2023?")
    assert order[-1] == "march"
    assert set(order[:2]) == {"june", "july"}


def test_each_rule_can_be_switched_off_alone():
    config = RankingConfig()
    assert config.without("bm25").bm25 is False
    assert config.without("context").context_weight == 0
    assert config.without("date").date_boost == 0 and config.without("date").speaker_boost == config.speaker_boost
    with pytest.raises(ValueError, match="unknown rule"):
        config.without("magic")
    assert set(ranking.RULES) == {
        *("bm25", "zscore_fusion", "context", "speaker", "date", "asker", "standing", "spread", "newer_first")
    }
    assert config.without("newer_first").newer_first is False
    assert config.without("spread").repeat_penalty == 0
    assert config.without("asker").asker_said_boost == 0


def test_reciprocal_rank_fusion_can_stand_in_for_zscores():
    strong = candidate("strong", "Mona: tea", similarity=0.9)
    weak = candidate("weak", "Mona: coffee", similarity=0.1)
    config = RankingConfig(zscore_fusion=False, context_weight=0, speaker_boost=0)
    assert ranked_ids([weak, strong], "tea?", config) == ["strong", "weak"]


def test_a_standing_fact_is_raised_only_when_it_shares_a_word_with_the_request():
    sharing = candidate("sharing", "Always cite sources (asked by mona)", similarity=0.0, counts={"sourc": 1})
    sharing.standing = True
    silent = candidate("silent", "Never use emojis (asked by mona)", similarity=0.3)
    silent.standing = True
    plain = candidate("plain", "Sources are in the wiki", counts={"sourc": 1})
    answers = [candidate(f"a{n}", f"Sources of part {n}", similarity=0.6, counts={"sourc": 2}) for n in range(5)]

    def ordered_by(config: RankingConfig) -> list[RankedRow]:
        return ranking.rank(
            [sharing, silent, plain, *answers] + background(),
            cues=ranking.analyse_question("where are the sources"),
            document_frequency={"sourc": 2},
            total=100,
            average_length=8.0,
            config=config,
        )

    # Positive control: below the first places without the rule.
    assert [c.id for c in ordered_by(RankingConfig().without("standing"))].index("sharing") >= 3
    ordered = ordered_by(RankingConfig())
    raised = {c.id: "standing" in c.parts for c in ordered if c.id in ("sharing", "silent", "plain")}
    assert raised == {"sharing": True, "silent": False, "plain": False}
    assert [c.id for c in ordered].index("sharing") < 3


def test_the_asker_rule_applies_to_first_person_questions_only():
    assert ranking.analyse_question("When does my sprint end?").first_person
    assert ranking.analyse_question("What did I say about the budget").first_person
    assert not ranking.analyse_question("When does Mona's sprint end?").first_person
    mine = candidate("mine", "Sprint ends on Friday")
    mine.by_asker = True
    for question, lift in (("When does my sprint end?", 0.4), ("When does the sprint end?", None)):
        assert parts_of(mine, question).get("asker") == lift


@pytest.mark.parametrize(
    "question",
    [
        "What profession did I mention I work in?",
        "Can you list the order in which I brought up each topic?",
        "What did I tell you about the budget?",
        "Which tools have I decided to use?",
    ],
)
def test_a_question_about_what_the_asker_said_is_told_apart(question):
    assert ranking.analyse_question(question).asker_said


@pytest.mark.parametrize(
    "question", ["What approach did you recommend for my resume?", "When does my sprint end?", "What did Mona say?"]
)
def test_other_questions_do_not_ask_what_the_asker_said(question):
    assert not ranking.analyse_question(question).asker_said


def test_the_asker_said_rule_lifts_the_askers_own_lines_more():
    mine = candidate("mine", "mona: I work as a colour technologist")
    mine.by_asker = True
    lifts = {
        question: parts_of(mine, question)["asker"]
        for question in ("What did I mention about my work?", "What do you think about my work?")
    }
    config = RankingConfig()
    assert lifts == {
        "What did I mention about my work?": config.asker_boost + config.asker_said_boost,
        "What do you think about my work?": config.asker_boost,
    }


def test_several_standing_facts_are_raised_when_the_request_falls_under_them():
    def ranked(config: RankingConfig) -> list[RankedRow]:
        standing = []
        for n in range(4):
            body = f"Always do thing {n} for reports (asked by mona)"
            fact = candidate(f"s{n}", body, similarity=0.01 * n, counts={"report": 1})
            fact.standing = True
            standing.append(fact)
        answers = [candidate(f"a{n}", f"Report part {n}", similarity=0.6, counts={"report": 2}) for n in range(8)]
        return ranking.rank(
            standing + answers + background(),
            cues=ranking.analyse_question("write the report"),
            document_frequency={"report": 12},
            total=100,
            average_length=8.0,
            config=config,
        )

    def raised(ordered: list[RankedRow]) -> set[str]:
        return {c.id for c in ordered if "standing" in c.parts}

    # Positive control: one kept raises only the best of them.
    assert raised(ranked(RankingConfig(standing_kept=1))) == {"s3"}
    ordered = ranked(RankingConfig())
    assert RankingConfig().standing_kept == 3
    assert raised(ordered) == {"s1", "s2", "s3"}
    ids = [c.id for c in ordered]
    assert max(ids.index(key) for key in ("s1", "s2", "s3")) < 6
    assert ids.index("s0") > max(ids.index(f"a{n}") for n in range(8))


def test_the_parts_of_one_source_give_way_to_other_sources():
    parts = [candidate(f"p{n}", f"Part {n} of the long answer about tea", similarity=0.9 - 0.01 * n) for n in range(4)]
    for part in parts:
        part.source = "episode:msg-7"
    other = candidate("other", "A short message about tea", similarity=0.5)
    other.source = "episode:msg-9"

    def order(config: RankingConfig) -> list[str]:
        return ranked_ids([*parts, other], "tea", config)

    # Positive control: without the rule every part of the long answer comes before the other message.
    assert order(RankingConfig().without("spread")) == ["p0", "p1", "p2", "p3", "other"]
    assert order(RankingConfig()) == ["p0", "other", "p1", "p2", "p3"]


def test_of_the_askers_statements_on_one_matter_the_newer_comes_first_and_the_older_says_so():
    older = candidate("older", "mona: my accuracy on area problems is 90%", counts={"accuraci": 1, "area": 1})
    newer = candidate("newer", "mona: my accuracy on area problems is now 95%", counts={"accuraci": 1, "area": 1})
    other = candidate("other", "assistant: accuracy on area problems grows with practice", counts={"accuraci": 1})
    newer.when = older.when + timedelta(days=30)
    for fact in (older, newer):
        fact.by_asker = True
    results = [older, other, newer]
    assert ranking.newer_first(results) == {"older": "newer"}
    assert [c.id for c in results] == ["newer", "older", "other"]


def test_the_same_time_is_ordered_by_when_each_was_written():
    first = candidate("first", "mona: the call is on April 20", counts={"call": 1, "april": 1})
    second = candidate("second", "mona: the call moved to April 22", counts={"call": 1, "april": 1})
    first.written, second.written = DAY, DAY + timedelta(minutes=5)
    for fact in (first, second):
        fact.by_asker = True
    results = [first, second]
    assert ranking.newer_first(results) == {"first": "second"}
    assert [c.id for c in results] == ["second", "first"]


def test_newer_first_leaves_other_speakers_other_matters_and_one_messages_parts_alone():
    def pair(**changes) -> list[RankedRow]:
        older = candidate("older", "mona: budget is 500", counts={"budget": 1, "month": 1})
        newer = candidate("newer", "mona: budget is 600", counts={"budget": 1, "month": 1})
        newer.when = older.when + timedelta(days=3)
        older.by_asker = newer.by_asker = True
        for name, value in changes.items():
            setattr(newer, name, value)
        return [older, newer]

    # Positive control: the pair as it is moves.
    moved = pair()
    assert ranking.newer_first(moved) and [c.id for c in moved] == ["newer", "older"]
    for changes in ({"by_asker": False}, {"lexeme_counts": {"budget": 1, "rent": 1, "car": 1}}):
        results = pair(**changes)
        assert ranking.newer_first(results) == {} and [c.id for c in results] == ["older", "newer"]
    parts = pair()
    parts[0].source = parts[1].source = "msg-7"
    assert ranking.newer_first(parts) == {}


def test_a_weak_fact_beside_a_strong_one_rises_more_than_a_strong_one_beside_a_weak_one():
    strong = candidate("strong", "Mona: the answer about tea", similarity=0.9, neighbours=[("weak", 1)])
    weak = candidate("weak", "Mona: yes", similarity=0.3, neighbours=[("strong", -1)])

    def context(config: RankingConfig) -> dict[str, float]:
        return {key: parts["context"] for key, parts in parts_by_id([strong, weak], "tea?", config).items()}

    # Positive control: lent alone, each takes the same share of its neighbour's score.
    shares = context(RankingConfig(context_lift=0.0))
    with_lift = context(RankingConfig())
    assert with_lift["strong"] == pytest.approx(shares["strong"])  # its neighbour is behind it: nothing added
    assert with_lift["weak"] > shares["weak"]  # the lead of its neighbour over it, added


@pytest.mark.parametrize(
    ("question", "year"),
    [("What charity event did he organise in 2024?", 2024), ("What changed during 2023?", 2023)],
)
def test_a_named_year_becomes_a_period(question, year):
    assert ranking.named_period(question) == (datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC))
    assert ranking.named_period("Who won 2024 to 1?") is None  # a number, not a year asked about


def test_of_two_named_speakers_the_subject_of_the_verb_is_preferred():
    jon = candidate("jon", "Jon: the store looks great", similarity=0.5)
    gina = candidate("gina", "Gina: the store looks great", similarity=0.5)
    assert ranking.analyse_question("What did Jon say about Gina's store?").subject == "Jon"
    assert ranked_ids([gina, jon], "What did Jon say about Gina's store?") == ["jon", "gina"]
    assert ranked_ids([jon, gina], "What does Gina think of Jon's studio?") == ["gina", "jon"]
    # A possessive is not a subject: "did Gina's store" asks of the store, so neither is preferred.
    assert ranking.analyse_question("When did Gina's store open for Jon?").subject is None


def test_the_preferred_speakers_name_counts_nothing_in_bm25():
    def fused(config: RankingConfig) -> dict[str, float]:
        by_mona = candidate("by_mona", "Mona: I drink tea", counts={"mona": 1})
        by_mona.label_lexeme = "mona"
        by_max = candidate("by_max", "Max: I drink tea")
        found = parts_by_id([by_mona, by_max], "What does Mona drink?", config, df={"mona": 30})
        return {key: parts["fused"] for key, parts in found.items()}

    preferred = fused(RankingConfig())
    assert preferred["by_mona"] == pytest.approx(preferred["by_max"])  # the speaker cue stands for the name
    unpreferred = fused(RankingConfig(speaker_boost=0.0))  # positive control: no speaker preferred
    assert unpreferred["by_mona"] > unpreferred["by_max"]


def test_a_persons_turn_takes_more_of_its_neighbours_score_than_another_fact():
    def context_of(body: str) -> float:
        prompt = candidate("prompt", "what have you been researching?", similarity=0.8, neighbours=[("reply", 1)])
        reply = candidate("reply", body, similarity=0.3, neighbours=[("prompt", -1)])
        return parts_by_id([prompt, reply], "research?", RankingConfig(context_lift=0.0))["reply"]["context"]

    turn, passage = context_of("Mona: adoption agencies"), context_of("adoption agencies")
    config = RankingConfig()
    assert turn / passage == pytest.approx(config.context_turn_weight / config.context_weight)
    assert config.context_turn_weight > config.context_weight
