"""Light, seeded rewording of evidence sentences to a chosen string similarity."""

from __future__ import annotations

import random
import re
from collections.abc import Callable

# the metrics' bit-parallel LCS (ROUGE-L's): a string is a sequence of characters
from rageval_core.metrics.generation import lcs_length

#: phrase swaps an annotator might make when copying evidence by hand (first occurrence only)
_SWAPS = [
    ("is limited to", "is capped at"),
    ("pays up to", "will pay at most"),
    ("up to", "a maximum of"),
    ("approximately", "roughly"),
    ("about", "around"),
    ("policy", "contract"),
    ("coverage", "cover"),
    ("Coverage", "Cover"),
    ("insured", "policyholder"),
    ("deductible", "excess"),
    ("per accident", "for each accident"),
    ("per person", "for each person"),
    ("per occurrence", "each occurrence"),
    ("is not covered", "is excluded"),
    ("is excluded", "falls outside the cover"),
    ("within", "inside"),
    ("revenue", "sales"),
    ("repurchased", "bought back"),
    ("the Company", "the business"),
    ("fiscal", "financial year"),
    ("was", "came to"),
    ("were", "stood at"),
    ("total revenue", "overall revenue"),
    ("means", "is defined as"),
    ("defines", "describes"),
    ("after", "following"),
    ("damage", "harm"),
    ("vehicle", "car"),
    ("months", "months' time"),
    ("the named beneficiary", "whoever is named as beneficiary"),
]
_MONEY = re.compile(r"\$(\d[\d,]*(?:\.\d+)?)( million| billion)?")


def similarity(a: str, b: str) -> float:
    """Normalised Indel similarity 2*LCS/(len a + len b) (rapidfuzz's fuzz.ratio / 100)."""
    if not a and not b:
        return 1.0
    return 2.0 * lcs_length(a, b) / (len(a) + len(b))


def _swap(old: str, new: str) -> Callable[[str], str]:
    pattern = re.compile(rf"\b{re.escape(old)}\b")
    return lambda s: pattern.sub(new, s, count=1)


def _transforms(text: str) -> list[Callable[[str], str]]:
    out: list[Callable[[str], str]] = []
    for old, new in _SWAPS:
        if re.search(rf"\b{re.escape(old)}\b", text):
            out.append(_swap(old, new))
    if _MONEY.search(text):
        out.append(
            lambda s: _MONEY.sub(lambda m: f"{m.group(1)}{m.group(2) or ''} dollars", s, count=1)
        )
    if text.count(". ") >= 1:
        # two sentences: the annotator kept only the first
        out.append(lambda s: s.split(". ", 1)[0] + ".")
    if ", " in text and len(text) > 90:
        out.append(lambda s: s.rsplit(", ", 1)[0] + "." if ", " in s else s)
    out.append(lambda s: "Per the summary: " + s)
    return out


def paraphrase(text: str, target: float, rng: random.Random) -> tuple[str, float]:
    """Reword text step by step until its similarity to text is about target; (new text, similarity)."""
    steps = _transforms(text)
    rng.shuffle(steps)
    best, best_sim = text, 1.0
    current = text
    for step in steps:
        nxt = step(current)
        if nxt == current:
            continue
        sim = similarity(text, nxt)
        if sim < max(0.5, target - 0.06):
            continue  # this step overshoots; try a gentler one
        current, best, best_sim = nxt, nxt, sim
        if sim <= target + 0.02:
            break
    return best, best_sim
