"""Contextual ranking: pure rules that order the candidates `memories.recall.contextual` found, each testable
and switchable alone (`RankingConfig`)."""

# The rules, and why each beats the plain hybrid ranking:
# - BM25 over the stored lexemes, with document frequencies from the rows recallable here, instead of
#   `ts_rank`, which has no notion of how rare a word is;
# - score fusion: each list's scores as z-scores over the pool, summed with a weight, instead of reciprocal
#   rank, which throws away how far ahead the leader is;
# - conversational context: a fact is lifted by the best of its neighbours in its place, because an answer
#   ("Researching adoption agencies") often matches the question only through the turn that prompted it;
# - speaker: a question naming someone who speaks in a candidate (a leading `Name:` label) prefers their lines:
#   the one it names, or of two the subject of its verb ("what did Jon say about Gina's store": Jon's). The
#   name then counts for nothing in BM25, which would otherwise favour every line of theirs a second time;
# - time: a question naming a date, a month or a year prefers facts that happened in it or shortly after;
# - asker: a first-person question ("my budget") prefers the asker's own facts, and one asking what the asker
#   said ("what did I mention") more so, since the answer is in their lines rather than in the replies;
# - standing: the best three standing instructions or preferences sharing a word with the request are raised
#   to the first few places, so a request that does not repeat an instruction's words still brings them (a
#   request often falls under more than one); only three, so they never crowd out the facts that answer it.
#   A place rather than a fixed gain: over a long chat the context rule alone spreads scores by several points
#   (measured on BEAM: +1.0 moved none into the ten);
# - newer first: of two of the asker's own results about the same matter (holding mostly the same words of the
#   question), from different messages, the newer is put just above the older, which names it (`newer`): a
#   figure or plan of theirs that changed reads in its latest form first. Only the order within the results
#   changes. Not between other speakers' lines: a question about a past event wants that event, and moving a
#   later line on the same matter above it cost LoCoMo hit@5 0.055;
# - spread: a source's further facts (the parts of one long message, which lend each other context) give way
#   to every other source's best, so the ten reach ten messages rather than ten parts of one.
# Nothing here knows any data set: names come from the candidates' own labels, dates are ordinary English dates.

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

MONTHS = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
_MONTH = "|".join(MONTHS) + "|" + "|".join(name[:3] for name in MONTHS) + r"|sept"

_ISO_DATE = re.compile(r"\b((?:19|20)\d\d)-(\d{2})-(\d{2})\b")
_DAY_MONTH_YEAR = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+({_MONTH})\.?,?\s+((?:19|20)\d\d)\b", re.IGNORECASE)
_MONTH_DAY_YEAR = re.compile(rf"\b({_MONTH})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+((?:19|20)\d\d)\b", re.IGNORECASE)
_MONTH_YEAR = re.compile(rf"\b({_MONTH})\.?,?\s+((?:19|20)\d\d)\b", re.IGNORECASE)
_YEAR = re.compile(r"\b(?:in|during|of|since)\s+((?:19|20)\d\d)\b", re.IGNORECASE)
# The subject of a question's verb: "what did Jon say", "how does Gina feel" (not "did Gina's store", nor
# "did Mona and Max paint", which asks of both).
_SUBJECT = re.compile(
    r"\b(?:does|did|do|is|was|are|were|has|had|have|would|will|can|could|should|might)\s+([A-Z][\w-]*)\b"
    r"(?!'|,|\s+(?:and|or|&)\s)"
)
# "Name: text", the way a transcript line is remembered; a label is a short run of capitalised words.
_SPEAKER = re.compile(r"^\s*([A-Z][\w'.-]*(?:\s+[A-Z][\w'.-]*){0,2})\s*:\s")


@dataclass(frozen=True)
class RankingConfig:
    """The weights of contextual ranking; each rule is off at zero (or `False`)."""

    bm25: bool = True  # BM25 over lexemes; False scores the lexical side by ts_rank
    k1: float = 1.2
    b: float = 0.75
    zscore_fusion: bool = True  # False fuses the two lists by reciprocal rank
    rrf_k: int = 60
    lexical_weight: float = 0.7
    # A fact takes this share of its best neighbour's score (`context_weight`), and this share of that
    # neighbour's lead over its own score (`context_lift`): a weak fact beside a strong one rises more than a
    # strong fact beside anything (BEAM dev 0.727 -> 0.755 hit@10, LoCoMo dev 0.853 -> 0.861 against 0.7 and 0).
    context_weight: float = 0.35
    # A person's turn in a conversation (a line labelled with their name) takes more: replies among people are
    # short and lean on what was just said, where an assistant's passage stands on its own (LoCoMo dev hit@10
    # 0.870 -> 0.875 against 0.35, BEAM dev unchanged; 0.45 for every fact cost BEAM 0.021).
    context_turn_weight: float = 0.45
    context_lift: float = 0.35
    context_window: int = 2
    context_decay: float = 0.8
    speaker_boost: float = 2.0
    date_boost: float = 3.0
    # Facts are said after they happen ("last week I ..."), so a named period
    # reaches this far past its end.
    date_reach: timedelta = timedelta(days=14)
    asker_boost: float = 0.4
    # More when the question asks what the asker said ("did I mention", "I brought up"): the answer is in
    # their own lines, not in what was said back.
    asker_said_boost: float = 0.8
    newer_first: bool = True  # see `newer_first`
    standing_rank: int = 3  # the place the best standing fact is raised to, when below it
    standing_kept: int = 3  # how many standing facts are raised
    # The profile facts of the place's own scope nearest the question, offered as candidates however few of
    # the request's words they hold (`memories.recall.candidates.RecallRequest.own_profile`).
    standing_candidates: int = 3
    # Each further fact from a source already placed above it (another part of one long message) loses this
    # much: enough to put every other source's best first, so the ten reach more messages.
    repeat_penalty: float = 5.0

    @property
    def uses_context(self) -> bool:
        """Whether neighbours lend anything: the statement then reads them, and ranking weighs them."""
        return bool(self.context_weight or self.context_turn_weight or self.context_lift)

    def without(self, rule: str) -> RankingConfig:
        """This configuration with one rule switched off (for ablations)."""
        off: dict[str, dict[str, Any]] = {
            "bm25": {"bm25": False},
            "zscore_fusion": {"zscore_fusion": False},
            "context": {"context_weight": 0.0, "context_turn_weight": 0.0, "context_lift": 0.0},
            "speaker": {"speaker_boost": 0.0},
            "date": {"date_boost": 0.0},
            "asker": {"asker_boost": 0.0, "asker_said_boost": 0.0},
            "standing": {"standing_rank": 0, "standing_candidates": 0},
            "spread": {"repeat_penalty": 0.0},
            "newer_first": {"newer_first": False},
        }
        if rule not in off:
            raise ValueError(f"unknown rule {rule!r}; one of {', '.join(off)}")
        return replace(self, **off[rule])


RULES = ("bm25", "zscore_fusion", "context", "speaker", "date", "asker", "standing", "spread", "newer_first")
DEFAULT_CONFIG = RankingConfig()


@dataclass(frozen=True)
class QuestionCues:
    """What a question says about the answer it wants, besides its words."""

    period: tuple[datetime, datetime] | None = None  # [start, end) of a date or month it names
    words: frozenset[str] = frozenset()  # capitalised words, to match speaker labels against
    subject: str | None = None  # the capitalised word its verb is asked of ("did Jon say": Jon)
    first_person: bool = False  # about the one asking ("my", "I", "me")
    asker_said: bool = False  # asks what the asker themselves said


def _month_number(name: str) -> int:
    key = name.lower().rstrip(".")[:3]
    return next(index for index, month in enumerate(MONTHS, start=1) if month.startswith(key))


def _day_period(year: int, month: int, day: int) -> tuple[datetime, datetime] | None:
    try:
        start = datetime(year, month, day, tzinfo=UTC)
    except ValueError:
        return None
    return start, start + timedelta(days=1)


def _month_period(year: int, month: int) -> tuple[datetime, datetime]:
    start = datetime(year, month, 1, tzinfo=UTC)
    end = datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=UTC)
    return start, end


def named_period(text: str) -> tuple[datetime, datetime] | None:
    """The first calendar day, month or year a text names ("on 8 May, 2023", "in May 2023", "2023-05-08",
    "in 2024")."""
    if match := _ISO_DATE.search(text):
        return _day_period(int(match[1]), int(match[2]), int(match[3]))
    if match := _DAY_MONTH_YEAR.search(text):
        return _day_period(int(match[3]), _month_number(match[2]), int(match[1]))
    if match := _MONTH_DAY_YEAR.search(text):
        return _day_period(int(match[3]), _month_number(match[1]), int(match[2]))
    if match := _MONTH_YEAR.search(text):
        return _month_period(int(match[2]), _month_number(match[1]))
    if match := _YEAR.search(text):
        year = int(match[1])
        return datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC)
    return None


_FIRST_PERSON = re.compile(r"\bI\b|\b(?i:me|my|mine|myself)\b")


def about_the_asker(question: str) -> bool:
    """Whether a question is in the first person ("my budget", "what did I say")."""
    return _FIRST_PERSON.search(question) is not None


_SAID_VERB = (
    r"(?:mention|say|said|tell|told|bring|brought|shar|ask|describe|note|state|explain|outline|express|"
    r"talk|raise|list|decide|choose|chose|plan)\w*"
)
_ASKER_SAID = re.compile(
    rf"\b(?:did|have|had|do|was|were)\s+I\s+(?:\w+\s+)?{_SAID_VERB}|\bI\s+(?:\w+\s+)?{_SAID_VERB}", re.IGNORECASE
)


def asks_what_the_asker_said(question: str) -> bool:
    """Whether a question asks about the asker's own words or choices ("what did I mention", "I brought up")."""
    return _ASKER_SAID.search(question) is not None


def analyse_question(question: str) -> QuestionCues:
    return QuestionCues(
        period=named_period(question),
        words=frozenset(re.findall(r"\b[A-Z][\w-]*", question)),
        subject=match[1] if (match := _SUBJECT.search(question)) else None,
        first_person=about_the_asker(question),
        asker_said=asks_what_the_asker_said(question),
    )


def speaker_of(body: str) -> str | None:
    """The label of a transcript line (`"Mona: see you at ten"` → `"Mona"`), if it has one."""
    match = _SPEAKER.match(body)
    return match[1] if match else None


def bm25_scores(
    docs: Sequence[dict[str, int]],
    lengths: Sequence[float],
    *,
    document_frequency: dict[str, int],
    total: int,
    average_length: float,
    k1: float = 1.2,
    b: float = 0.75,
) -> list[float]:
    """Okapi BM25 of each document (its query-lexeme counts and its length) for the query's lexemes."""
    idf = {lexeme: math.log(1 + (total - df + 0.5) / (df + 0.5)) for lexeme, df in document_frequency.items() if df > 0}
    average_length = average_length or 1.0
    scores = []
    for counts, length in zip(docs, lengths, strict=True):
        norm = k1 * (1 - b + b * length / average_length)
        scores.append(
            sum(idf[lexeme] * tf * (k1 + 1) / (tf + norm) for lexeme, tf in counts.items() if lexeme in idf and tf > 0)
        )
    return scores


def zscores(values: Sequence[float | None]) -> list[float]:
    """Standard scores over the values present; a missing value scores as the lowest present one."""
    present = [value for value in values if value is not None]
    if not present:
        return [0.0] * len(values)
    mean = sum(present) / len(present)
    spread = math.sqrt(sum((value - mean) ** 2 for value in present) / len(present)) or 1.0
    floor = min(present)
    return [((floor if value is None else value) - mean) / spread for value in values]


def reciprocal_ranks(values: Sequence[float | None], k: int) -> list[float]:
    """1 / (k + rank) by descending value; a missing or zero value contributes nothing."""
    order = sorted((index for index, value in enumerate(values) if value), key=lambda index: -(values[index] or 0.0))
    out = [0.0] * len(values)
    for rank, index in enumerate(order, start=1):
        out[index] = 1.0 / (k + rank)
    return out


@dataclass
class RankedRow:
    """One row the database found: its scores, when it happened, and its neighbours in its place."""

    id: str
    body: str
    when: datetime
    similarity: float | None = None  # cosine similarity to the question; None when not embedded
    lexeme_counts: dict[str, int] = field(default_factory=dict)
    length: float = 0.0
    ts_rank: float = 0.0
    neighbours: list[tuple[str, int]] = field(default_factory=list)  # (id, offset): -1 the fact before, +1 after
    by_asker: bool = False  # the asker's own fact (`memories.recall.asker`)
    standing: bool = False  # a standing instruction or preference (`memories.recall.standing`)
    source: str = ""  # the message an episode is a part of (its event's reference); empty for other facts
    written: datetime | None = None  # when it was written, ordering facts of the same time (`newer_first`)
    label_lexeme: str | None = None  # the lexeme at its first position (a transcript line's label), if a question word
    score: float = 0.0
    parts: dict = field(default_factory=dict)


def rank(
    candidates: list[RankedRow],
    *,
    cues: QuestionCues,
    document_frequency: dict[str, int],
    total: int,
    average_length: float,
    config: RankingConfig = DEFAULT_CONFIG,
) -> list[RankedRow]:
    """Score every candidate (setting `score` and `parts`) and return them best first."""
    if not candidates:
        return []
    speakers = {c.id: speaker_of(c.body) for c in candidates}
    label = (
        _named_speaker({name for name in speakers.values() if name is not None}, cues) if config.speaker_boost else None
    )
    # The speaker cue stands for the name: as a word it would favour each of their lines once more.
    named = {c.label_lexeme for c in candidates if c.label_lexeme and label is not None and speakers[c.id] == label}
    if config.bm25:
        lexical: Sequence[float | None] = bm25_scores(
            [_without(c.lexeme_counts, named) for c in candidates],
            [c.length for c in candidates],
            document_frequency=document_frequency,
            total=total,
            average_length=average_length,
            k1=config.k1,
            b=config.b,
        )
    else:
        lexical = [c.ts_rank for c in candidates]
    fused = _fuse(lexical, [c.similarity for c in candidates], config)
    own = {c.id: value for c, value in zip(candidates, fused, strict=True)}
    floor = min(fused)
    period = cues.period
    for candidate, value in zip(candidates, fused, strict=True):
        parts = {"fused": value}
        if config.uses_context:
            lent = _context(candidate, own, floor, config)
            weight = config.context_turn_weight if speakers[candidate.id] else config.context_weight
            parts["context"] = weight * lent + config.context_lift * max(0.0, lent - value)
        if label is not None and speakers[candidate.id] == label:
            parts["speaker"] = config.speaker_boost
        if config.date_boost and period is not None and period[0] <= candidate.when < period[1] + config.date_reach:
            parts["date"] = config.date_boost
        if config.asker_boost and cues.first_person and candidate.by_asker:
            parts["asker"] = config.asker_boost + (config.asker_said_boost if cues.asker_said else 0.0)
        candidate.parts = parts
        candidate.score = sum(parts.values())
    _lift_standing(candidates, config)
    ordered = sorted(candidates, key=lambda c: -c.score)
    if config.repeat_penalty:
        ordered = _spread(ordered, config.repeat_penalty)
    return ordered


def _spread(ordered: list[RankedRow], penalty: float) -> list[RankedRow]:
    """Lower each fact by `penalty` for every fact of its source ranked above it, and order them again."""
    seen: dict[str, int] = {}
    for candidate in ordered:
        if not candidate.source:
            continue
        repeats = seen.get(candidate.source, 0)
        seen[candidate.source] = repeats + 1
        if repeats:
            candidate.parts["spread"] = -penalty * repeats
            candidate.score -= penalty * repeats
    return sorted(ordered, key=lambda c: -c.score)


# How far above a fact a raised one is put: enough to order them, too little to matter otherwise.
_STEP = 1e-6


def _lift_standing(candidates: list[RankedRow], config: RankingConfig) -> None:
    """Raise the best `standing_kept` standing facts that share a word with the request (hold one of its
    lexemes) to place `standing_rank` and the places after it, best first, when they are below; the gain is
    kept in `parts`."""
    if not config.standing_rank:
        return
    sharing = sorted((c for c in candidates if c.standing and c.lexeme_counts), key=lambda c: -c.score)
    kept = sharing[: config.standing_kept]
    for index, candidate in enumerate(kept):
        place = config.standing_rank + index
        others = sorted((c.score for c in candidates if c is not candidate), reverse=True)
        if len(others) < place:
            continue  # within the first places already
        # Just above the fact now in that place, so the order of the rest stands; those raised before it may
        # stand just above the same fact, so each is raised a step less than the one before.
        gain = others[place - 1] - candidate.score + _STEP * (len(kept) - index)
        if gain > 0:
            candidate.parts["standing"] = gain
            candidate.score += gain


# Two results are about the same matter when they hold at least this many of the question's words in common,
# and this share of the words either holds.
SAME_MATTER_WORDS = 2
SAME_MATTER_SHARE = 0.6


def same_matter(first: RankedRow, second: RankedRow) -> bool:
    """Whether two of the asker's results say something about the same matter: mostly the same words of the
    question."""
    if not (first.by_asker and second.by_asker):
        return False
    words, other = set(first.lexeme_counts), set(second.lexeme_counts)
    shared = len(words & other)
    return shared >= SAME_MATTER_WORDS and shared >= SAME_MATTER_SHARE * max(len(words), len(other))


def _age(candidate: RankedRow) -> tuple[datetime, datetime]:
    return candidate.when, candidate.written or candidate.when


def _updates(newer: RankedRow, older: RankedRow) -> bool:
    """Whether `newer` came later than `older`, from another message, and says something about the same matter."""
    if _age(older) >= _age(newer) or (newer.source and newer.source == older.source):
        return False
    return same_matter(older, newer)


def newer_first(results: list[RankedRow]) -> dict[str, str]:
    """Put each result just above the highest older one it updates, in place; returns each updated result's id
    with the id of the newest result updating it."""
    newest: dict[str, str] = {}
    for newer in sorted(results, key=_age):
        place = results.index(newer)
        older = next((index for index, candidate in enumerate(results[:place]) if _updates(newer, candidate)), None)
        if older is None:
            continue
        results.insert(older, results.pop(place))
        for candidate in results[older + 1 : place + 1]:
            if _updates(newer, candidate):
                newest[candidate.id] = newer.id
    return newest


def _fuse(lexical: Sequence[float | None], semantic: Sequence[float | None], config: RankingConfig) -> list[float]:
    """Each candidate's lexical and semantic scores as one: weighted z-scores, or reciprocal ranks."""
    if config.zscore_fusion:
        return [config.lexical_weight * lex + sem for lex, sem in zip(zscores(lexical), zscores(semantic), strict=True)]
    return [
        lex + sem
        for lex, sem in zip(
            reciprocal_ranks(lexical, config.rrf_k), reciprocal_ranks(semantic, config.rrf_k), strict=True
        )
    ]


def _named_speaker(labels: set[str], cues: QuestionCues) -> str | None:
    """The speaker among the candidates' labels whom the question asks about: the one it names, or of several
    the subject of its verb ("what did Jon say about Gina's store"). None for "what do A and B both like"."""
    if cues.subject in labels:
        return cues.subject
    named = labels & cues.words
    return next(iter(named)) if len(named) == 1 else None


def _without(counts: dict[str, int], lexemes: set[str]) -> dict[str, int]:
    return {lexeme: count for lexeme, count in counts.items() if lexeme not in lexemes} if lexemes else counts


def _context(candidate: RankedRow, own: dict[str, float], floor: float, config: RankingConfig) -> float:
    """The best score a neighbour lends: a farther one lends less, its lead over the pool's floor
    shrinking by `context_decay` a step."""
    best = floor
    window, decay = config.context_window, config.context_decay
    for nid, offset in candidate.neighbours:
        lent = own.get(nid)
        if lent is not None and abs(offset) <= window:
            best = max(best, floor + decay ** (abs(offset) - 1) * (lent - floor))
    return best
