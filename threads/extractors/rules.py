"""The `rules` extractor: deterministic, for explicit statements a person makes about themselves or asks to be kept."""

# It recognises, in what people (role `user`) write:
# - "remember that …", "note that …", "keep in mind …", "don't forget …";
# - "call me …" (and "don't call me …");
# - "my X is Y" (and "my X is not Y anymore", "my X is no longer Y");
# - "I prefer …", "I'd rather …" (and "I no longer prefer …");
# - where people live and work: "I live in …", "I moved to …",
#   "I work at / for / as …", each with its negation ("I don't live in … anymore",
#   "I no longer work at …"); "I'm allergic to …" (and "I'm not allergic to …").
#   Past and future forms ("I lived in", "I used to work at", "I'm moving to")
#   are not facts about now and are left alone, and so are passing states
#   ("I am tired": there is no rule for "I am X");
# - "from now on …";
# - retractions: "I'm not X anymore", "I no longer X", "I don't X anymore";
# - corrections: "actually, …", "no, …", "now …", "…, actually" make the
#   statement replace the newest fact of the same kind.
#
# Precision comes before recall: a sentence is left alone when it is a question,
# a hypothetical ("if …", "suppose …", "imagine …", "maybe …"), reported or
# quoted speech ("she said …", anything in quotation marks or a block quote),
# or otherwise unclear. A missed fact can be said again; a wrong one is
# read back to the model as true.

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from threads.extractors.base import ABOUT_AUTHOR, ABOUT_WORKSPACE, CANDIDATE_MAX_CHARS, Candidate, EventView, normalise
from threads.extractors.standing import imperative, standing_instruction, stated_preference

# Quoted spans, code and block quotes: someone else's words, or not a statement at all.
_QUOTED = re.compile(
    r"\"[^\"\n]*\"|“[^”\n]*”|«[^»\n]*»|„[^“”\n]*[“”]|‘[^’\n]*’|(?<!\w)'[^'\n]+'(?!\w)|```.*?```|`[^`\n]*`",
    re.DOTALL,
)
_QUOTE_MARK = "⟦quoted⟧"
_BLOCK_QUOTE = re.compile(r"^\s*>.*$", re.MULTILINE)
_SENTENCES = re.compile(r"(?<=[.!?])\s+|\n+|;\s+")
# Titles and abbreviations whose full stop does not end a sentence.
_ABBREVIATIONS = re.compile(r"\b(Dr|Mr|Mrs|Ms|Mx|Prof|St|Jr|Sr|vs|etc|e\.g|i\.e)\.", re.IGNORECASE)
_HELD_STOP = "∯"

_CONTRACTIONS = [
    (r"\bI'm\b", "I am"),
    (r"\bI'd\b", "I would"),
    (r"\bI've\b", "I have"),
    (r"\bI'll\b", "I will"),
    (r"\bdon't\b", "do not"),
    (r"\bdoesn't\b", "does not"),
    (r"\bdidn't\b", "did not"),
    (r"\bisn't\b", "is not"),
    (r"\baren't\b", "are not"),
    (r"\bwasn't\b", "was not"),
    (r"\bcan't\b", "cannot"),
    (r"\bwon't\b", "will not"),
    (r"\bwouldn't\b", "would not"),
    (r"\byou're\b", "you are"),
]

_QUESTION_WORDS = {
    "what", "who", "whom", "whose", "where", "when", "why", "how", "which",
    "do", "does", "did", "can", "could", "would", "should", "will", "shall",
    "is", "are", "am", "was", "were", "have", "has", "had", "may", "might",
}  # fmt: skip
_HYPOTHETICAL = re.compile(
    r"\b(if|unless|suppose|supposing|imagine|imagining|hypothetically|hypothetical|pretend|pretending|"
    r"assuming|assume|let's say|let us say|what if|wish|were to|maybe|perhaps|probably|might|in case|"
    r"in a world where|would be|could be|wonder)\b",
    re.IGNORECASE,
)
_REPORTED = re.compile(
    r"\b(said|says|say|told|tells|tell|asked|asks|wrote|writes|claims|claimed|mentioned|mentions|thinks|"
    r"thought|believes|believed|according to|joked|replied|heard|quoted|quoting)\b",
    re.IGNORECASE,
)
_LEAD = re.compile(
    r"^(actually|correction|sorry|wait|no(?!\s+longer\b)|oops|i mean|rather|update|scratch that|now|these days|"
    r"ok|okay|oh|well|so|also|and|but|btw|by the way|fyi|hey|hi|hello|just|anyway|one more thing)\b[\s,:;!.-]*",
    re.IGNORECASE,
)
_CORRECTING_LEADS = {"actually", "correction", "sorry", "no", "i mean", "rather", "update", "scratch that", "now"}
_CORRECTING_TAIL = re.compile(r",?\s+(actually|instead|now)$", re.IGNORECASE)
_FILLER_TAIL = re.compile(r",?\s+(by the way|btw|fyi|thanks|thank you|please|ok|okay|haha|lol)$", re.IGNORECASE)
_FIRST_PERSON = re.compile(r"\bI\b|\b(?i:me|my|mine|myself)\b")
_SECOND_PERSON = re.compile(r"\b(you|your|yours|yourself)\b", re.IGNORECASE)

_REMEMBER = re.compile(
    r"^(?:please\s+)?(?:remember|note|keep in mind|do not forget|never forget|make a note|take note)"
    r"(?:\s+that\b|\s*:|,)?\s*(?P<x>.+)$",
    re.IGNORECASE,
)
_CALL_ME = re.compile(
    r"^(?i:(?:(?:please|you can|you may|just|you should)\s+)*(?P<neg>do not\s+|never\s+|stop\s+)?"
    r"(?:call|calling)\s+me\s+)(?P<name>[A-Z][\w.'-]*(?:\s+[A-Z][\w.'-]*){0,2})(?P<rest>.*)$"
)
_CALL_ME_REST = re.compile(
    r"^(?:\s*[,(–—-].*|\s+(?:instead|from now on|please|going forward|rather than|not|thanks|thank you)\b.*|)$",
    re.IGNORECASE,
)
_NOT_NAMES = {
    "back", "later", "tomorrow", "tonight", "today", "soon", "sometime", "anytime", "whenever", "maybe",
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "asap", "if", "when",
    "crazy", "old", "please", "ok", "okay", "now", "again",
}  # fmt: skip
_MY_X_IS_Y = re.compile(
    r"^my\s+(?P<x>[a-z][a-z'-]*(?:\s+[a-z][a-z'-]*){0,3}?)\s+(?P<verb>is|are)\s+"
    r"(?P<neg>not\s+|no longer\s+)?(?P<y>.+?)(?P<anymore>\s+(?:anymore|any more|these days))?$",
    re.IGNORECASE,
)
# "my point is …", "my question is …": ways of talking, not facts about the speaker.
_NOT_ATTRIBUTES = {
    "point", "question", "guess", "concern", "problem", "issue", "worry", "understanding", "hope", "idea",
    "thought", "thoughts", "suggestion", "answer", "bad", "pleasure", "turn", "fault", "mistake", "apologies",
    "impression", "feeling", "sense", "day", "week", "morning", "afternoon", "evening", "reply", "response",
    "request", "message", "take", "opinion", "view", "advice", "recommendation", "intention", "plan",
}  # fmt: skip
_CLAUSE_STARTS = re.compile(r"^(that|to|because|so|like|going|being|too|very|really|kind of|sort of)\b", re.IGNORECASE)
_PREFER = re.compile(
    r"^I\s+(?:(?:really|much|strongly|generally|usually|always|still|also|definitely|now)\s+)*"
    r"(?P<neg>do not\s+(?:really\s+)?|no longer\s+)?(?P<verb>prefer|would prefer|would rather)\s+"
    r"(?P<y>.+?)(?P<anymore>\s+(?:anymore|any more|these days))?$",
)
_FROM_NOW_ON = re.compile(r"^(?:(?P<pre>.+?),?\s+)?from now on\b[,:]?\s*(?P<x>.*)$", re.IGNORECASE)
# Other ways to say "from now on", taken only before an instruction ("going forward, we need to cut costs" is none).
_GOING_FORWARD = re.compile(
    r"^(?:going forward|moving forward|in (?:the )?future|from here on(?: out)?)\b[,:]?\s*(?:please\s+)?(?P<x>.+)$",
    re.IGNORECASE,
)
_I_AM_NOT = re.compile(
    r"^I\s+am\s+(?:(?P<nolonger>no longer)|not)\s+(?P<y>.+?)(?P<anymore>\s+(?:anymore|any more))?$",
)
_I_DO_NOT = re.compile(
    r"^I\s+(?:(?P<nolonger>no longer)|do not)\s+(?P<v>[a-z]+)\s+(?P<rest>.+?)(?P<anymore>\s+(?:anymore|any more))?$",
)
_NOT_ANYMORE = re.compile(r"^not\s+(?P<y>.+?)\s+(?:anymore|any more)$", re.IGNORECASE)

# Where people live and work, and what they are allergic to. Present forms only:
# "I lived in", "I used to work at", "I'm moving to" are not facts about now.
_STILL = r"(?:(?:currently|now|still|also|actually|really|just|recently|finally|already)\s+)*"
_LIVE = re.compile(
    rf"^I\s+{_STILL}(?P<neg>do not\s+(?:really\s+)?|no longer\s+|am not\s+|am no longer\s+)?"
    r"(?P<verb>live|am living|have been living|have lived|living)\s+in\s+(?P<y>.+?)"
    r"(?P<anymore>\s+(?:anymore|any more))?$"
)
_MOVED = re.compile(rf"^I\s+{_STILL}(?:moved|have moved|have just moved|relocated|have relocated)\s+to\s+(?P<y>.+?)$")
_WORK = re.compile(
    rf"^I\s+{_STILL}(?P<neg>do not\s+|no longer\s+|am not\s+|am no longer\s+)?"
    r"(?P<verb>work|am working|have been working|working)\s+(?P<prep>at|for|as)\s+(?P<y>.+?)"
    r"(?P<anymore>\s+(?:anymore|any more))?$"
)
_ALLERGIC = re.compile(
    r"^I\s+am\s+(?P<neg>not\s+|no longer\s+)?(?:(?:very|really|severely|also|super|deathly|extremely|mildly|"
    r"slightly|so|quite)\s+)*allergic\s+to\s+(?P<y>.+?)(?P<anymore>\s+(?:anymore|any more))?$"
)
# A value ends where another clause begins: "Lisbon, and I love it", "a bank because …".
_VALUE_BREAK = re.compile(
    r"\s*(?:[,;:(]|\s[-–—]\s|\s(?:and|but|because|since|so|which|where|when|while|with|who|until|after|before|"
    r"though|although|if|for\s+(?:a|an|the|about|almost|over|nearly|\d+)|now that)\b)",
    re.IGNORECASE,
)
# A list of what one is allergic to goes on past "and" and "with": "cats and animals with fur".
_LIST_BREAK = re.compile(
    r"\s*(?:[,;:(]|\s[-–—]\s|\s(?:but|because|since|so|which|when|while|though|although|if|now that)\b)", re.I
)
_VALUE_TAIL = re.compile(
    r"\s+(?:as well|too|now|already|these days|at the moment|right now|currently|again|recently|yesterday|"
    r"(?:last|this) (?:year|month|week|summer|spring|fall|autumn|winter|weekend)|"
    r"(?:a|one|two|three|a few|a couple of|several) (?:years?|months?|weeks?|days?) ago)$",
    re.IGNORECASE,
)
# Where one lives or works, spoken idiomatically: not a place.
_NOT_PLACES = {
    "the moment", "the present", "the past", "the future", "fear", "hope", "denial", "peace", "harmony",
    "a bubble", "a dream", "a dream world", "the now", "the shadows", "the dark", "style", "luxury", "comfort",
    "the same way", "the city of my dreams", "progress", "a team", "a group", "shifts", "night", "nights",
    "home", "the weekend", "weekends", "free", "nothing", "fun", "a living", "peace and quiet",
}  # fmt: skip
_PAST_CONTEXT = re.compile(
    r"\b(?:when I was|as a (?:kid|child|teen)|years ago|back then|growing up|in (?:19|20)\d\d)\b"
)

_VOCATIVE = re.compile(r"^[A-Z][\w'-]*,")
_EXHORTATIONS = {
    "just", "always", "never", "keep", "stay", "be", "do", "try", "take", "go", "believe", "trust", "stop",
    "enjoy", "focus", "hang", "follow", "let", "don't",
}  # fmt: skip
# A value ends where a new clause about something else begins: "Aragorn, he grows so much".
_CLAUSE_BREAK = re.compile(
    r",\s+(?=(?:he|she|it|they|i|we|you|it's|that's|this|which|who|but|so|and it)\b)", re.IGNORECASE
)
_ACTIVITY_SLOTS = re.compile(r"\b(hobby|hobbies|job|passion|favou?rite|role|sport|pastime)$")

_MODALS = {"can", "cannot", "could", "will", "would", "shall", "should", "must", "might", "may", "was", "did", "had"}
_IRREGULAR = {"am": "is", "are": "is", "be": "is", "have": "has", "do": "does", "go": "goes"}
_ADVERBS = {"really", "also", "usually", "always", "never", "often", "still", "now", "generally", "only", "just"}
_MAX_WORDS = 15
# Words after which "you" starts a clause as its subject.
_SUBORDINATORS = {
    "when", "whenever", "if", "unless", "that", "time", "before", "after", "until", "because", "while", "as",
}  # fmt: skip


def verb_third_person(verb: str) -> str:
    """`prefer` → `prefers`, `watch` → `watches`, `study` → `studies`; modals and past forms unchanged."""
    lower = verb.lower()
    if lower in _IRREGULAR:
        return _IRREGULAR[lower]
    if lower in _MODALS or lower.endswith("ed") or not lower.isalpha():
        return verb
    if lower.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if lower.endswith("y") and len(lower) > 1 and lower[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def third_person(clause: str, name: str) -> str:
    """A first-person clause about `name`, told in the third person; "you" becomes the agent."""
    words = clause.split()
    out: list[str] = []
    conjugate_next = False
    for index, word in enumerate(words):
        bare = word.rstrip(",.;:!")
        tail = word[len(bare) :]
        lower = bare.lower()
        if bare == "I":
            out.append(name + tail)
            conjugate_next = True
            continue
        if lower == "you" and not tail and (index == 0 or words[index - 1].lower() in _SUBORDINATORS):
            out.append("the agent")  # the subject of its clause: "when you suggest" → "when the agent suggests"
            conjugate_next = True
            continue
        if conjugate_next and lower in _ADVERBS:
            out.append(word)
            continue
        if conjugate_next:
            out.append(verb_third_person(bare) + tail)
            conjugate_next = False
            continue
        replacement = {
            "my": f"{name}'s",
            "mine": f"{name}'s",
            "me": name,
            "myself": name,
            "you": "the agent",
            "yourself": "the agent",
            "your": "the agent's",
            "yours": "the agent's",
        }.get(lower)
        out.append((replacement or bare) + tail)
    return " ".join(out)


def _capitalise(text: str) -> str:
    return text[:1].upper() + text[1:] if text else text


def _clean_value(value: str) -> str:
    return value.strip().rstrip(".!,;:").strip()


def _expand(text: str) -> str:
    text = text.replace("’", "'")
    for pattern, replacement in _CONTRACTIONS:
        text = re.sub(pattern, replacement, text, flags=re.IGNORECASE if not pattern.startswith(r"\bI") else 0)
    return text


def sentences(text: str) -> Iterator[str]:
    """Sentences of a message, with quoted spans marked so that they can be left alone."""
    text = _BLOCK_QUOTE.sub(" ", text)
    text = _QUOTED.sub(_QUOTE_MARK, text)
    text = _ABBREVIATIONS.sub(lambda match: match.group(1) + _HELD_STOP, text)
    for sentence in _SENTENCES.split(text):
        sentence = sentence.strip().replace(_HELD_STOP, ".")
        if sentence:
            yield sentence


def _strip_leads(sentence: str) -> tuple[str, bool]:
    correction = False
    while True:
        match = _LEAD.match(sentence)
        if not match or match.end() == 0:
            break
        if match.group(1).lower() in _CORRECTING_LEADS:
            correction = True
        sentence = sentence[match.end() :]
    sentence = sentence.strip().rstrip(".!").strip()
    while True:
        filler = _FILLER_TAIL.search(sentence)
        tail = _CORRECTING_TAIL.search(sentence)
        if filler:
            sentence = sentence[: filler.start()]
        elif tail:
            correction = True
            sentence = sentence[: tail.start()]
        else:
            break
    return sentence.strip().rstrip(".!").strip(), correction


# Advice and truisms introduced by "remember that …": modal or sweeping words, and nothing specific.
_GENERIC = re.compile(
    r"\b(can|could|may|might|should|must|will|would|sometimes|always|never|even|every|everyone|everything|"
    r"anything|nothing|anyone|nobody|somebody|important|matters?|worth|possible|okay|ok|fine|best|better|life|"
    r"people|things)\b",
    re.IGNORECASE,
)


def _aphorism(clause: str) -> bool:
    """A general truth rather than a fact: sweeping or modal, with no number, time or name to pin it down."""
    words = clause.split()
    specific = re.search(r"\d", clause) or any(word[:1].isupper() for word in words[1:])
    if specific:
        return False
    return bool(_GENERIC.search(clause)) or words[0].lower().endswith("ing")


def _too_long(value: str) -> bool:
    return len(value.split()) > _MAX_WORDS


# --- The shapes of a statement about the speaker ----------------------------------------

# A shape reader's answer when the text is not in its shape, so that the next shape is tried.
# None is an answer too: the text has the shape, but says nothing worth keeping.
NOT_THIS_SHAPE: Final = False
Reading = Candidate | None | Literal[False]


@dataclass(frozen=True)
class _Said:
    """A sentence being read: its text (contractions expanded, leads and tails stripped), the
    event it comes from, and whether it corrects something said before."""

    text: str
    event: EventView
    correction: bool

    @property
    def name(self) -> str:
        return self.event.author

    def fact(self, **fields) -> Candidate:
        """A candidate about the speaker, citing this event."""
        return Candidate(about=ABOUT_AUTHOR, author_id=self.event.author_id, sequences=(self.event.sequence,), **fields)

    def value(self, body: str, key: str) -> Candidate:
        """A profile fact the speaker has one value of (a name, a home): a new value replaces the old."""
        return self.fact(body=body, key=key, exclusive=True, correction=self.correction, tier="profile")

    def denial(self, body: str, key: str, retracts: str, *, tier: str = "profile") -> Candidate:
        """Something the speaker says is not (or no longer) true of them: it replaces the fact it denies."""
        return self.fact(body=body, key=key, negated=True, retracts=retracts, tier=tier)


def _no_longer(match: re.Match) -> bool:
    """Whether a negation says the thing was true once ("no longer", "anymore"), not that it never was."""
    return (match.group("neg") or "").startswith(("no longer", "am no longer")) or bool(match.group("anymore"))


def _tenses_agree(match: re.Match, progressive: str) -> bool:
    """ "I am not living in …" pairs "am" with "living"; "I living in …" and "I am not live in …" are not English."""
    return (match.group("neg") or "").startswith("am") == (match.group("verb") == progressive)


def _lasting_value(raw: str, *, place: bool) -> str | None:
    """The place, organisation, role or allergen a lasting fact names, or None when it names none."""
    cut = (_VALUE_BREAK if place else _LIST_BREAK).split(raw, maxsplit=1)[0]
    value = _clean_value(_VALUE_TAIL.sub("", _clean_value(cut)))
    if not value or len(value.split()) > 8 or _FIRST_PERSON.search(value) or _SECOND_PERSON.search(value):
        return None
    if place:
        lower = value.lower()
        if lower in _NOT_PLACES:
            return None
        # A place or an organisation is a name ("Lisbon", "Google") or a noun phrase ("a small town").
        if not (value[:1].isupper() or re.match(r"^(?:a|an|the)\s+\w", lower)):
            return None
    return value


def _called(said: _Said) -> Reading:
    """ "call me Mo", "don't call me Mo"."""
    call = _CALL_ME.match(said.text)
    if not call or call.group("name").split()[0].lower() in _NOT_NAMES or not _CALL_ME_REST.match(call.group("rest")):
        return NOT_THIS_SHAPE
    called = call.group("name")
    if call.group("neg"):
        return said.denial(f"{said.name} does not want to be called {called}", "called", called)
    return said.value(f"{said.name} wants to be called {called}", "called")


def _lives_in(said: _Said) -> Reading:
    """ "I live in Lisbon", "I don't live in Lisbon anymore"."""
    lived = _LIVE.match(said.text)
    if not lived:
        return NOT_THIS_SHAPE
    value = _lasting_value(lived.group("y"), place=True)
    if value is None or not _tenses_agree(lived, "living"):
        return None
    if lived.group("neg"):
        gone = _no_longer(lived)
        body = f"{said.name} no longer lives in {value}" if gone else f"{said.name} does not live in {value}"
        return said.denial(body, "lives-in", f"lives in {value}")
    return said.value(f"{said.name} lives in {value}", "lives-in")


def _moved_to(said: _Said) -> Reading:
    """ "I moved to Porto": where the speaker lives now, replacing where they lived before."""
    moved = _MOVED.match(said.text)
    if not moved:
        return NOT_THIS_SHAPE
    if _PAST_CONTEXT.search(said.text):
        return None  # "I moved to Ohio when I was five": where they lived then, not now
    value = _lasting_value(moved.group("y"), place=True)
    if value is None:
        return None
    return said.fact(
        body=f"{said.name} moved to {value}", key="lives-in", exclusive=True, correction=True, tier="profile"
    )


def _works(said: _Said) -> Reading:
    """ "I work at Acme", "I work as a nurse", "I no longer work for Acme"."""
    worked = _WORK.match(said.text)
    if not worked:
        return NOT_THIS_SHAPE
    if not _tenses_agree(worked, "working"):
        return None
    preposition = worked.group("prep")
    value = _lasting_value(worked.group("y"), place=preposition != "as")
    if value is None:
        return None
    if preposition == "as" and not re.match(r"^(?:a|an)\s+\w", value.lower()):
        return None  # "I work as hard as I can"
    key = "works-as" if preposition == "as" else "works-at"
    if worked.group("neg"):
        gone = _no_longer(worked)
        body = f"{said.name} {'no longer works' if gone else 'does not work'} {preposition} {value}"
        return said.denial(body, key, f"works {preposition} {value}")
    return said.value(f"{said.name} works {preposition} {value}", key)


def _allergic_to(said: _Said) -> Reading:
    """ "I'm allergic to cats", "I'm not allergic to nuts"; one may be allergic to many things at once."""
    allergic = _ALLERGIC.match(said.text)
    if not allergic:
        return NOT_THIS_SHAPE
    value = _lasting_value(allergic.group("y"), place=False)
    if value is None:
        return None
    key = f"allergic:{normalise(value)[:100]}"
    if allergic.group("neg"):
        gone = _no_longer(allergic)
        body = f"{said.name} is {'no longer' if gone else 'not'} allergic to {value}"
        return said.denial(body, key, f"allergic to {value}")
    return said.fact(body=f"{said.name} is allergic to {value}", key=key, tier="profile")


def _names_an_attribute(attribute: str, value: str) -> bool:
    """Whether "my <attribute> is <value>" tells something about the speaker, not how things go or a way of talking."""
    first_value_word = value.split()[0].lower() if value else ""
    if first_value_word.endswith("ing") and not _ACTIVITY_SLOTS.search(attribute):
        return False  # "my hard work is paying off": how things are going, not an attribute
    return not (
        attribute.split()[-1] in _NOT_ATTRIBUTES
        or _CLAUSE_STARTS.match(value)
        or _too_long(value)
        or not value
        or _FIRST_PERSON.search(value)
    )


def _attribute(said: _Said) -> Reading:
    """ "my timezone is CET", "my timezone is not CET anymore"."""
    mine = _MY_X_IS_Y.match(said.text)
    if not mine:
        return NOT_THIS_SHAPE
    attribute = mine.group("x").lower()
    value = _clean_value(_CLAUSE_BREAK.split(mine.group("y"))[0])
    if not _names_an_attribute(attribute, value):
        return None
    verb = mine.group("verb").lower()
    value = third_person(value, said.name)
    key = f"my:{normalise(attribute)}"
    if mine.group("neg"):
        return said.denial(f"{said.name}'s {attribute} {verb} no longer {value}", key, value)
    return said.value(f"{said.name}'s {attribute} {verb} {value}", key)


def _preference(said: _Said) -> Reading:
    """ "I prefer tea", "I'd rather walk", "I no longer prefer tea"; preferences sit side by side."""
    prefer = _PREFER.match(said.text)
    if not prefer:
        return NOT_THIS_SHAPE
    value = _clean_value(prefer.group("y"))
    if not value or _too_long(value):
        return None
    value = third_person(value, said.name)
    rather = prefer.group("verb").endswith("rather")
    key = f"prefers:{normalise(value)[:100]}"
    if prefer.group("neg"):
        if _no_longer(prefer):
            body = f"{said.name} no longer {'would rather' if rather else 'prefers'} {value}"
        else:
            body = f"{said.name} does not {'want' if rather else 'prefer'} {value}"
        return said.denial(body, key, value)
    body = f"{said.name} would rather {value}" if rather else f"{said.name} prefers {value}"
    return said.fact(body=body, key=key, correction=said.correction, tier="profile")


def _from_now_on(said: _Said) -> Reading:
    """ "from now on, answer in French" (or "going forward, …"): a standing request, unless it is a statement
    about the speaker."""
    later = _FROM_NOW_ON.match(said.text)
    if not later:
        forward = _GOING_FORWARD.match(said.text)
        if not forward or not imperative(forward["x"]):
            return NOT_THIS_SHAPE
        later = forward
    clause = _clean_value(later["x"] or later.groupdict().get("pre") or "")
    if not clause or _too_long(clause):
        return None
    if not clause.startswith("I ") and clause[1:2].islower():
        clause = clause[0].lower() + clause[1:]
    if _CALL_ME.match(clause) or (_FIRST_PERSON.search(clause) and not imperative(clause)):
        # "from now on, call me Mo" has a shape; "I'll start writing things down from
        # now on" is the speaker's own plan, not something to keep about them.
        return _statement(_Said(clause, said.event, correction=True))
    body = f"From now on, {third_person(clause, said.name)} (asked by {said.name})"
    return said.fact(body=body, key=f"from-now-on:{normalise(clause)[:100]}", tier="profile")


def _instruction(said: _Said, clause: str) -> Candidate | None:
    """ "always include units when I ask about distances": kept for the speaker, as they said it."""
    if not said.name or not said.event.author_id:
        return None  # an instruction is someone's: it is kept where their facts are
    if clause.split()[0].lower() not in ("always", "never"):
        clause = clause[0].lower() + clause[1:]
    body = f"{_capitalise(third_person(clause, said.name))} (asked by {said.name})"
    return said.fact(body=body, key=f"instruction:{normalise(clause)[:100]}", tier="profile")


def _preference_in_clause(said: _Said) -> Candidate | None:
    """ "I'm building a small app, so I prefer few dependencies, how …?": the preference of a longer sentence."""
    if not said.name or not said.event.author_id:
        return None
    found = stated_preference(said.text)
    if found is None:
        return None
    verb, value = found
    if verb == "like it when you":
        value = third_person(f"you {value}", said.name)
        body = f"{said.name} likes it when {value}"
    elif verb == "would rather":
        value = third_person(value, said.name)
        body = f"{said.name} would rather {value}"
    else:
        value = third_person(value, said.name)
        body = f"{said.name} prefers {value}"
    return said.fact(body=body, key=f"prefers:{normalise(value)[:100]}", correction=said.correction, tier="profile")


def _no_longer_being(said: _Said, value: str) -> Candidate:
    return said.denial(f"{said.name} is no longer {value}", f"is:{normalise(value)}", f"is {value}", tier="log")


def _no_longer_is(said: _Said) -> Reading:
    """ "I'm not vegetarian anymore", "I am no longer vegetarian"; a plain "I am not X" is left alone."""
    not_any = _I_AM_NOT.match(said.text)
    if not not_any or not (not_any.group("nolonger") or not_any.group("anymore")):
        return NOT_THIS_SHAPE
    value = _clean_value(not_any.group("y"))
    if not value or _too_long(value):
        return None
    return _no_longer_being(said, third_person(value, said.name))


def _no_longer_does(said: _Said) -> Reading:
    """ "I don't smoke anymore", "I no longer drink coffee"."""
    no_more = _I_DO_NOT.match(said.text)
    if not no_more or not (no_more.group("nolonger") or no_more.group("anymore")):
        return NOT_THIS_SHAPE
    verb = no_more.group("v")
    rest = _clean_value(no_more.group("rest"))
    if verb in ("prefer", "would") or not rest or _too_long(rest):
        return None
    done = f"{verb_third_person(verb)} {third_person(rest, said.name)}"
    return said.denial(f"{said.name} no longer {done}", f"does:{normalise(verb + ' ' + rest)}", done, tier="log")


def _not_anymore(said: _Said) -> Reading:
    """ "not vegetarian anymore", as a fragment."""
    fragment = _NOT_ANYMORE.match(said.text)
    if not fragment:
        return NOT_THIS_SHAPE
    value = _clean_value(fragment.group("y"))
    if not value or _too_long(value) or _SECOND_PERSON.search(value):
        return None
    return _no_longer_being(said, value)


# In order: the first shape a text has decides, even when it then keeps nothing.
_SHAPES = (
    _called,
    _lives_in,
    _moved_to,
    _works,
    _allergic_to,
    _attribute,
    _preference,
    _from_now_on,
    _no_longer_is,
    _no_longer_does,
    _not_anymore,
)


def _statement(said: _Said) -> Candidate | None:
    """A statement about the speaker in one of the known shapes, or None."""
    if not said.event.author_id or not said.name:
        return None  # a fact about a person needs an account to belong to
    for shape in _SHAPES:
        reading = shape(said)
        if reading is not NOT_THIS_SHAPE:
            return reading
    return None


class RulesExtractor:
    """Explicit statements in what people write, as candidates; see the module docstring."""

    name = "rules"

    def extract(self, events: Sequence[EventView], *, context: Sequence[EventView] = ()) -> list[Candidate]:
        found: list[Candidate] = []
        for event in events:
            if event.role != "user":
                continue  # only people's own words: never the agent's, a tool's or the system's
            for sentence in sentences(event.text):
                candidate = self.from_sentence(sentence, event)
                if candidate is not None:
                    found.append(candidate)
        return found

    def from_sentence(self, sentence: str, event: EventView) -> Candidate | None:
        if _QUOTE_MARK in sentence:
            return None
        text, correction = _strip_leads(_expand(sentence))
        if not text:
            return None
        if "?" not in sentence and (instruction := standing_instruction(text)) is not None:
            # Read before the checks below: "whenever I ask …, …" opens like a question, "if I ask …" like a
            # hypothetical, and both are an instruction's condition.
            return _instruction(_Said(text, event, correction), instruction)
        stated = None if "?" in sentence else self._stated(text, event, correction)
        if stated is None:
            return _preference_in_clause(_Said(text, event, correction))
        return stated

    def _stated(self, text: str, event: EventView, correction: bool) -> Candidate | None:
        """A whole sentence in one of the known shapes, read by the precision rules of the module comment."""
        first = text.split()[0].lower().strip(",")
        negative_imperative = re.match(r"^(do not|never|stop)\b", text, re.IGNORECASE)
        if first in _QUESTION_WORDS and not negative_imperative:
            return None
        if _HYPOTHETICAL.search(text) or _REPORTED.search(text):
            return None
        remembered = _REMEMBER.match(text)
        if remembered:
            return self._remembered(_clean_value(remembered.group("x")), event, correction)
        return _statement(_Said(text, event, correction))

    def _remembered(self, clause: str, event: EventView, correction: bool) -> Candidate | None:
        """What follows "remember that": a known shape, a fact about the speaker, or a workspace fact."""
        if not clause or len(clause.split()) < 2 or clause.lower().startswith("to "):
            return None  # "remember to …" is a task, not a fact
        if len(clause) > CANDIDATE_MAX_CHARS:
            return None
        if _VOCATIVE.match(clause) or clause.split()[0].lower() in _EXHORTATIONS:
            return None  # "remember, just do it!", "remember Jon, …": encouragement, not a fact
        shaped = _statement(_Said(clause, event, correction))
        if shaped is not None:
            return shaped
        if _SECOND_PERSON.search(clause):
            return None  # "remember, I'm always here for you": said to someone, ambiguous
        if not _FIRST_PERSON.search(clause) and _aphorism(clause):
            return None  # "remember that staying positive is important": advice, not a fact about anything
        if _FIRST_PERSON.search(clause):
            if not event.author_id or not event.author:
                return None
            body = third_person(clause, event.author)
            return Candidate(
                body=body,
                about=ABOUT_AUTHOR,
                author_id=event.author_id,
                key=f"note:{normalise(body)[:150]}",
                sequences=(event.sequence,),
                correction=correction,
            )
        return Candidate(
            body=_capitalise(clause),
            about=ABOUT_WORKSPACE,
            key=f"note:{normalise(clause)[:150]}",
            sequences=(event.sequence,),
            correction=correction,
        )
