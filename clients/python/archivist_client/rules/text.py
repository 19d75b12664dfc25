"""The text rules: what a stored field may hold, and how untrusted text is shown to a model."""

# Pure: no Django, no database. Serializers, models, render and threads use it,
# so one rule has one spelling.
#
# Three classes of character, three treatments:
#
# - **Control characters** (C0 but tab and newline, DEL, and the C1 block
#   U+0080–U+009F) are refused at write in every stored text field. They have
#   no place in a fact, and a terminal or a model may act on them.
# - **Invisible characters** (Unicode tag characters U+E0000–U+E007F, which a
#   model reads and a person cannot see; zero-width characters; bidirectional
#   controls, which make a line read differently from its bytes; U+FEFF; the
#   soft hyphen; stray variation selectors) are decided per field:
#   - *identifiers and names* (channel ids, usernames, slugs, subject ids, run
#     ids, evidence refs) refuse them at write, naming the code point and its
#     position, because an id that looks like another id is an impersonation;
#   - *free text* (memory bodies, labels, reasons, thread events) keeps them as
#     written and `neutralise` shows them at render as a visible mark such as
#     `[U+200B]`, so a reviewer of the block sees that something was there.
#     Thread events are never refused for them: real chat carries RTL marks.
#   Valid emoji sequences pass intact: ZWJ sequences, one variation selector
#   after its base, and the tag sequences of subdivision flags.
# - **Look-alike angle brackets** never imitate the fence: `escape` writes every
#   character that folds (NFKC/NFKD) to `<` or `>`, and the look-alike brackets
#   NFKC leaves alone, as an entity.

from __future__ import annotations

import re
import unicodedata

# C0 controls but tab (\x09) and newline (\x0a), DEL, and the C1 block.
CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# The same class for PostgreSQL (NUL cannot be stored, so it is not listed); see migration 0005.
CONTROL_CHARS_SQL = "[\\x01-\\x08\\x0b-\\x1f\\x7f-\\x9f]"
# An id is one line: every C0 control (tab and newline too), DEL and the C1 block.
ID_CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f-\x9f]")

ZWNJ, ZWJ = "\u200c", "\u200d"
_BLACK_FLAG = "\U0001f3f4"
# A subdivision flag: the black flag, a region and subdivision code in tag letters or digits, CANCEL TAG.
_FLAG_SEQUENCE = re.compile("\U0001f3f4[\U000e0030-\U000e0039\U000e0061-\U000e007a]{2,7}\U000e007f")

# What each invisible class is called in a message.
_CLASSES: tuple[tuple[int, int, str], ...] = (
    (0x00AD, 0x00AD, "a soft hyphen"),
    (0x034F, 0x034F, "a combining grapheme joiner"),
    (0x061C, 0x061C, "a bidirectional mark"),
    (0x115F, 0x1160, "a Hangul filler"),
    (0x180E, 0x180E, "a zero-width separator"),
    (0x200B, 0x200D, "a zero-width character"),
    (0x200E, 0x200F, "a bidirectional mark"),
    (0x202A, 0x202E, "a bidirectional control"),
    (0x2060, 0x2064, "a zero-width character"),
    (0x2066, 0x2069, "a bidirectional isolate"),
    (0x3164, 0x3164, "a Hangul filler"),
    (0xFE00, 0xFE0F, "a variation selector"),
    (0xFEFF, 0xFEFF, "a byte order mark"),
    (0xFFA0, 0xFFA0, "a Hangul filler"),
    (0xE0000, 0xE007F, "a Unicode tag character"),
    (0xE0100, 0xE01EF, "a variation selector"),
)
_INVISIBLE = re.compile(
    "["
    + "".join(re.escape(chr(low)) + ("-" + re.escape(chr(high)) if high != low else "") for low, high, _ in _CLASSES)
    + "]"
)

# Pictographic ranges an emoji ZWJ sequence is made of (enough to tell an emoji from a letter).
_EMOJI_RANGES = (
    (0x00A9, 0x00A9),
    (0x00AE, 0x00AE),
    (0x203C, 0x203C),
    (0x2049, 0x2049),
    (0x2122, 0x2122),
    (0x2139, 0x2139),
    (0x2194, 0x21AA),
    (0x2300, 0x23FF),
    (0x24C2, 0x24C2),
    (0x25A0, 0x27BF),
    (0x2934, 0x2935),
    (0x2B00, 0x2BFF),
    (0x3030, 0x3030),
    (0x303D, 0x303D),
    (0x3297, 0x3299),
    (0x1F000, 0x1FAFF),
)

# Brackets NFKC leaves as they are but a reader (or a model) takes for < and >.
ANGLE_LOOKALIKES = {
    "\u02c2": "<",
    "\u02c3": ">",
    "\u1438": "<",
    "\u1433": ">",
    "\u2039": "<",
    "\u203a": ">",
    "\u2329": "<",
    "\u232a": ">",
    "\u276e": "<",
    "\u276f": ">",
    "\u27e8": "<",
    "\u27e9": ">",
    "\u29fc": "<",
    "\u29fd": ">",
    "\u3008": "<",
    "\u3009": ">",
    "\ufe64": "<",
    "\ufe65": ">",
    "\uff1c": "<",
    "\uff1e": ">",
}
_FENCE_TAG = re.compile(r"<\s*/?\s*memory\b", re.IGNORECASE)


def describe(char: str) -> str:
    """`U+202E (a bidirectional control)`: a character named so a person can find it."""
    code = ord(char)
    for low, high, name in _CLASSES:
        if low <= code <= high:
            return f"U+{code:04X} ({name})"
    if char == "\x00":
        return "U+0000 (NUL, a control character)"
    if CONTROL_CHARS.match(char):
        return f"U+{code:04X} (a control character)"
    return f"U+{code:04X}"


def control_problem(value: str, pattern: re.Pattern = CONTROL_CHARS) -> str | None:
    """Why `value` may not be stored because of a control character, or None."""
    found = pattern.search(value)
    if found is None:
        return None
    return (
        f"Contains {describe(found.group())} at character {found.start() + 1}; "
        "text may not hold control characters (only newline and tab)."
    )


def invisible_problem(value: str) -> str | None:
    """Why an identifier or name may not hold `value`: its first invisible character, or None."""
    found = _INVISIBLE.search(value)
    if found is None:
        return None
    return (
        f"Contains {describe(found.group())} at character {found.start() + 1}; "
        "ids and names may not hold invisible characters."
    )


def identifier_problem(value: str) -> str | None:
    """Why `value` may not be an id (a path parameter, say): a control character, tab and newline included,
    or an invisible character; None when it may."""
    found = ID_CONTROL_CHARS.search(value)
    if found is not None:
        return (
            f"Contains {describe(found.group())} at character {found.start() + 1}; "
            "ids may not hold control characters (newline and tab included)."
        )
    return invisible_problem(value)


def surrogate_path(data, path: str = "") -> str | None:
    """The dotted path of the first string (or key) holding a lone surrogate, at any depth, or None.

    JSON may spell a lone surrogate (`"\\ud800"`); Python then holds a string
    that is not Unicode text, which PostgreSQL cannot store and UTF-8 cannot
    encode.
    """
    if isinstance(data, str):
        return (path or "non_field_errors") if _has_surrogate(data) else None
    if isinstance(data, dict):
        for key, value in data.items():
            key_text = str(key)
            if _has_surrogate(key_text):
                return path or "non_field_errors"
            found = surrogate_path(value, f"{path}.{key_text}" if path else key_text)
            if found:
                return found
    elif isinstance(data, list):
        for index, value in enumerate(data):
            found = surrogate_path(value, f"{path}.{index}" if path else str(index))
            if found:
                return found
    return None


def _has_surrogate(value: str) -> bool:
    return any("\ud800" <= char <= "\udfff" for char in value)


def _is_emoji(char: str) -> bool:
    code = ord(char)
    return any(low <= code <= high for low, high in _EMOJI_RANGES)


def _is_script_letter(char: str) -> bool:
    """A letter or mark outside ASCII: the scripts (Arabic, Persian, Indic) where joiners shape words."""
    return ord(char) > 0x7F and unicodedata.category(char)[0] in "LM"


def _is_variation_selector(char: str) -> bool:
    code = ord(char)
    return 0xFE00 <= code <= 0xFE0F or 0xE0100 <= code <= 0xE01EF


def _kept(text: str, index: int) -> bool:
    """Whether the invisible character at `index` is part of a sequence that means something visible."""
    char = text[index]
    before = text[index - 1] if index > 0 else ""
    after = text[index + 1] if index + 1 < len(text) else ""
    if _is_variation_selector(char):
        # One selector after a base it can vary chooses how it looks (text or emoji style, a keycap, a
        # glyph of an ideograph); after a plain letter, or in a run, it only carries hidden data.
        if not before or _INVISIBLE.match(before) or CONTROL_CHARS.match(before):
            return False
        if char in "︎️":
            return _is_emoji(before) or before in "0123456789#*"
        return ord(before) > 0x7F
    if char == ZWJ:
        base = index - 1
        while base >= 0 and (_is_variation_selector(text[base]) or 0x1F3FB <= ord(text[base]) <= 0x1F3FF):
            base -= 1
        modifier = base >= 0 and 0x1F3FB <= ord(text[base]) <= 0x1F3FF
        if base >= 0 and after and (_is_emoji(text[base]) or modifier) and _is_emoji(after):
            return True
        return bool(before) and bool(after) and _is_script_letter(before) and _is_script_letter(after)
    if char == ZWNJ:
        return bool(before) and bool(after) and _is_script_letter(before) and _is_script_letter(after)
    return False


def _mark(run: list[str]) -> str:
    if len(run) <= 3:
        return "".join(f"[U+{ord(char):04X}]" for char in run)
    return f"[U+{ord(run[0]):04X}\u2026U+{ord(run[-1]):04X}: {len(run)} invisible characters]"


def neutralise(text: str) -> str:
    """Free text with every invisible or control character shown as a visible mark, emoji intact."""
    if not text or (_INVISIBLE.search(text) is None and CONTROL_CHARS.search(text) is None):
        return text
    out: list[str] = []
    run: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char == _BLACK_FLAG:
            flag = _FLAG_SEQUENCE.match(text, index)
            if flag:
                if run:
                    out.append(_mark(run))
                    run = []
                out.append(flag.group())
                index = flag.end()
                continue
        hidden = (_INVISIBLE.match(char) and not _kept(text, index)) or (
            CONTROL_CHARS.match(char) and char not in "\t\n"
        )
        if hidden:
            run.append(char)
        else:
            if run:
                out.append(_mark(run))
                run = []
            out.append(char)
        index += 1
    if run:
        out.append(_mark(run))
    return "".join(out)


def _angle(char: str) -> str | None:
    """`<` or `>` when `char` reads as one (itself, a compatibility form, or a look-alike), else None."""
    if char in "<>":
        return char
    if char in ANGLE_LOOKALIKES:
        return ANGLE_LOOKALIKES[char]
    if ord(char) < 0x80:
        return None
    folded = unicodedata.normalize("NFKD", char)
    if "<" in folded:
        return "<"
    if ">" in folded:
        return ">"
    return None


def escape_markup(text: str) -> str:
    """`&` and every character that reads as `<` or `>` written as an entity, so nothing opens or closes markup."""
    out = []
    for char in text:
        if char == "&":
            out.append("&amp;")
            continue
        angle = _angle(char)
        out.append("&lt;" if angle == "<" else "&gt;" if angle == ">" else char)
    return "".join(out)


def fence_fold(text: str) -> str:
    """Text as the fence check reads it: NFKC, look-alike brackets as `<` and `>`, case folded."""
    folded = unicodedata.normalize("NFKC", text or "")
    return "".join(ANGLE_LOOKALIKES.get(char, char) for char in folded).casefold()


def imitates_fence(text: str) -> bool:
    """True when `text`, folded, holds something a reader would take for `<memory>` or `</memory>`."""
    return _FENCE_TAG.search(fence_fold(text)) is not None
