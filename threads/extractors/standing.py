"""Standing instructions and preferences in a sentence: how the agent should answer from now on or whenever
something is asked ("always …", "never …", "whenever I ask …, …"), and what the speaker prefers."""

# Pure text rules over a sentence whose contractions are expanded and whose leads ("hey", "so") are stripped
# (`threads.extractors.rules` does both); they return the clause to keep, or None. An instruction is an
# imperative addressed to the agent, so it must start with a verb people instruct an assistant with: "Never
# mind" and "Always a pleasure" start with none. One-off requests ("please summarise this") carry no marker
# of lasting (always, never, whenever, every time) and are left alone.

from __future__ import annotations

import re

INSTRUCTION_VERBS = frozenset({
    "add", "address", "adjust", "adopt", "answer", "apply", "ask", "assume", "avoid", "be", "bold", "break",
    "bring", "call", "capitalise", "capitalize", "check", "cite", "clarify", "compare", "confirm", "convert",
    "correct", "define", "describe", "double-check", "emphasise", "emphasize", "end", "explain", "express", "flag",
    "focus", "follow", "format", "frame", "give", "group", "highlight", "include", "keep", "label", "lead", "leave",
    "let", "limit", "link", "list", "maintain", "make", "mark", "match", "mention", "note", "number", "offer",
    "open", "organise", "organize", "outline", "point", "present", "prioritise", "prioritize", "provide", "put",
    "quote", "recommend", "refer", "remind", "reply", "respond", "round", "run", "say", "send", "share", "shorten",
    "show", "sign", "skip", "sort", "speak", "spell", "start", "state", "stick", "stop", "structure", "suggest",
    "summarise", "summarize", "talk", "tell", "test", "translate", "treat", "use", "walk", "warn", "wrap", "write"
})  # fmt: skip
_POLITE = r"(?:(?:please|kindly)\s+)?"
_WHENEVER = r"(?:whenever|every time|each time|any time|anytime)"
# "make sure to always …", "I would like you to never …": a frame around an always/never instruction.
_FRAME = (
    r"(?:(?:make sure(?: that)?(?: you| to)?|be sure to|remember to|I would like you to|I want you to|"
    r"I need you to)\s+)?"
)
_ALWAYS = re.compile(
    rf"^{_POLITE}{_FRAME}{_POLITE}(?P<marker>always|never|do not ever|never ever)\s+(?P<verb>[\w-]+)(?P<rest>.*)$",
    re.IGNORECASE,
)
# "whenever I ask about trips, list the costs first"
_CONDITION_FIRST = re.compile(
    rf"^(?P<condition>(?:{_WHENEVER}|when|if)\s+(?:I|you)\s[^,]{{2,160}}),\s*"
    rf"{_POLITE}(?P<main>.+)$",
    re.IGNORECASE,
)
# "use metric units whenever you give me distances"
_CONDITION_AFTER = re.compile(
    rf"^{_POLITE}(?P<verb>[\w-]+)\s(?P<rest>.*\b{_WHENEVER}\s+(?:I|you)\b.*)$",
    re.IGNORECASE,
)
_PAST_CONDITION = re.compile(r"\b(?:I|you)\s+(?:was|were|did|had|used to)\b|\bago\b", re.IGNORECASE)
# "…, so I prefer X, how can I …": a preference stated in a clause of its own, at the start or after a comma
# or a joining word; never after "that", "thinks" or "suppose", which report or imagine it.
_PREFERENCE = re.compile(
    r"(?:^|,\s*|\s(?=(?:so|and|but|because|since|as)\s))(?:(?:so|and|but|because|since|as)\s+)?"
    r"I\s+(?:(?:really|much|strongly|generally|usually|always|still|also|definitely|do)\s+)*"
    r"(?P<verb>prefer|would prefer|would rather|like it when you)\s+(?P<value>\S.*)$"
)
# Where a preference's value ends: the next clause (a question, a reason, an aside) or the sentence's end.
_PREFERENCE_END = re.compile(
    r",\s*(?=(?:how|what|can|could|would|will|should|do|does|is|are|which|where|when|why|so|but|because|"
    r"considering|while|since|though|although|maybe|perhaps|if|please|thanks|thank|any|I)\b)"
    r"|\s+(?:so that|but|because|considering|while|though|although)\s+|[?;]",
    re.IGNORECASE,
)
_ASKING = frozenset({
    "do", "does", "did", "can", "could", "would", "should", "will", "shall", "is", "are", "am", "was", "were",
    "have", "has", "had", "may", "might", "what", "who", "which", "why", "where", "whose", "suppose", "supposing",
    "imagine", "if", "unless", "maybe", "perhaps"
})  # fmt: skip
MAX_WORDS = 30


def _long(clause: str) -> bool:
    return len(clause.split()) > MAX_WORDS


def imperative(clause: str) -> bool:
    """Whether a clause starts as an instruction does: a verb of `INSTRUCTION_VERBS`, perhaps after always/never."""
    words = clause.split()
    if words and words[0].lower() in ("always", "never"):
        words = words[1:]
    return bool(words) and words[0].lower().strip(",") in INSTRUCTION_VERBS


def standing_instruction(text: str) -> str | None:
    """The instruction a sentence gives for every later answer (the sentence, without "please" and frames
    such as "make sure to"), or None for anything else, one-off requests included."""
    if (always := _ALWAYS.match(text)) and always["verb"].lower() in INSTRUCTION_VERBS:
        marker = "always" if always["marker"].lower() == "always" else "never"
        clause = f"{marker} {always['verb']}{always['rest']}"
    elif (first := _CONDITION_FIRST.match(text)) and imperative(first["main"]):
        if _PAST_CONDITION.search(first["condition"]):
            return None  # "when I was young, …": a memory, not a condition
        clause = f"{first['condition']}, {first['main']}"
    elif (after := _CONDITION_AFTER.match(text)) and after["verb"].lower() in INSTRUCTION_VERBS:
        clause = f"{after['verb']} {after['rest']}"
    else:
        return None
    clause = clause.strip().rstrip(".!").strip()
    return None if _long(clause) else clause


def stated_preference(text: str) -> tuple[str, str] | None:
    """The verb and value of a preference the speaker states in a clause of their own ("…, so I prefer
    libraries with few dependencies, how …" → ("prefer", "libraries with few dependencies")), or None."""
    found = _PREFERENCE.search(text)
    if found is None:
        return None
    before = text[: found.start()].strip()
    first = before.split()[0].lower().strip(",") if before else ""
    if first in _ASKING or re.search(r"\b(?:if|suppose|imagine|said|says|told|thinks|thought)\b", before, re.I):
        return None  # asked, imagined or reported
    value = _PREFERENCE_END.split(found["value"], maxsplit=1)[0].strip().rstrip(".!,").strip()
    if not value or _long(value) or value.lower().startswith(("not ", "it if ")):
        return None
    return found["verb"], value
