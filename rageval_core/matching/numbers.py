"""The numbers in a text, for the "numbers must match" guard and the drilldown's "numbers differ".

In tables and policies a near-duplicate with another figure is a miss: "$48,811" is 0.97 like
"$48,881" to a fuzzy scorer. The guard asks that every number of a gold span appear among the
numbers of the chunk. A number is a run of digits with inner "," or "." groups ("48,881",
"3.50", "2019"), compared in a canonical form so that a formatting difference is no difference:
thousands commas dropped ("48,881" = "48881"), trailing zeros of a fraction dropped ("3.50" =
"3.5", "3.0" = "3"), leading zeros dropped ("007" = "7"). Signs, currency and percent marks are
not part of the number ("-5%" holds 5).

The rule is written twice, here for one text (the drilldown) and as SQL for a whole run
(store.reads.numbers_missing_pairs, run on DuckDB's threads); tests hold the two equal.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

#: a number token; store.reads.NUMBER_PATTERN is the same pattern for DuckDB's RE2
NUMBER = re.compile(r"[0-9]+(?:[.,][0-9]+)*")
_FRACTION_ZEROS = re.compile(r"(\.[0-9]*?)0+$")
_LEADING_ZEROS = re.compile(r"^0+([0-9])")


def canonical(token: str) -> str:
    """The canonical form of one number token (see the module's docstring)."""
    text = token.replace(",", "")
    text = _FRACTION_ZEROS.sub(r"\1", text)
    if text.endswith("."):
        text = text[:-1]
    return _LEADING_ZEROS.sub(r"\1", text)


def number_spans(text: str | None) -> list[tuple[int, int, str]]:
    """(start, end, canonical) of every number in text, in order."""
    if not text:
        return []
    return [(m.start(), m.end(), canonical(m.group())) for m in NUMBER.finditer(text)]


def numbers_of(text: str | None) -> frozenset[str]:
    """The canonical numbers of text."""
    return frozenset(n for _, _, n in number_spans(text))


def missing_numbers(span: str | None, chunk: str | None) -> frozenset[str]:
    """The numbers of span that chunk does not hold (empty: the numbers match)."""
    return numbers_of(span) - numbers_of(chunk)


def odd_numbers(
    chunk: str, wanted: Iterable[str], start: int = 0, end: int | None = None
) -> tuple[tuple[int, int], ...]:
    """(start, end) of the numbers in chunk[start:end] that are not among wanted: the figures
    that differ from the span's, marked in the drilldown."""
    stop = len(chunk) if end is None else end
    want = set(wanted)
    return tuple(
        (a, b) for a, b, n in number_spans(chunk) if start <= a and b <= stop and n not in want
    )
