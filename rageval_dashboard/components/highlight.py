"""Escaped HTML for chunk texts with the matched gold-span window marked (pure; no Streamlit calls).

Every piece of user text goes through escape_text (components/text.py: the one rule
for user text) before it is joined with markup, so the result is safe for
st.markdown(..., unsafe_allow_html=True): no Markdown or HTML in it is read, whatever its line
endings.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from rageval_dashboard.components.text import escape_text

HIT_CLASS = "rageval-hit"
COVERS_COLOUR = "#2e9e4f"  # green: the chunk covers a gold span at the threshold
OTHER_COLOUR = "#c4c4c4"  # grey: it does not
MARK_STYLE = "background-color:#fde68a;color:#1f2937;padding:0 1px;border-radius:2px"
ODD_CLASS = "rageval-odd"
#: a figure in the matched window that is not the span's ("numbers differ"): red, struck through
ODD_STYLE = (
    "background-color:#fca5a5;color:#1f2937;padding:0 1px;border-radius:2px;"
    "text-decoration:line-through #b91c1c"
)
FOUND_CLASS = "rageval-found"
#: a search hit: outlined, so it shows inside a highlighted window as well as outside one
FOUND_STYLE = "outline:2px solid #2563eb;outline-offset:1px;border-radius:2px"
WEAK_STYLE = (
    "background-color:transparent;color:inherit;text-decoration:underline dotted #b08900;"
    "text-underline-offset:3px"
)


def found_ranges(text: str, needle: str) -> list[tuple[int, int]]:
    """(start, end) of every case-insensitive occurrence of needle in text (none when empty).

    Found on the casefolded text; a character whose casefold changes its length (ß -> ss)
    would shift the offsets, so such a text is searched as it is (case-sensitively)."""
    needle = needle.strip()
    if not needle:
        return []
    folded, want = text.casefold(), needle.casefold()
    if len(folded) != len(text):
        folded, want = text, needle
    out, at = [], folded.find(want)
    while at >= 0 and want:
        out.append((at, at + len(want)))
        at = folded.find(want, at + len(want))
    return out


def _inner(
    text: str, a: int, b: int, odd: Sequence[tuple[int, int]], found: Sequence[tuple[int, int]]
) -> str:
    """text[a:b] escaped, the odd figures and the search hits inside it wrapped."""
    cuts = {a, b}
    for x, y in (*odd, *found):
        cuts.update(c for c in (x, y) if a < c < b)
    edges = sorted(cuts)
    pieces = []
    for x, y in itertools.pairwise(edges):
        piece = escape_text(text[x:y])
        if any(p <= x and y <= q for p, q in found):
            piece = f'<span class="{FOUND_CLASS}" style="{FOUND_STYLE}">{piece}</span>'
        if any(p <= x and y <= q for p, q in odd):
            piece = f'<mark class="{ODD_CLASS}" style="{ODD_STYLE}">{piece}</mark>'
        pieces.append(piece)
    return "".join(pieces)


def word_window(text: str, start: int, end: int) -> tuple[int, int]:
    """[start, end) widened to whole words: a window the matcher began or ended inside a word
    ("venue grew" from "revenue grew") is marked from that word's first to its last letter."""
    while 0 < start < len(text) and text[start - 1].isalnum() and text[start].isalnum():
        start -= 1
    while 0 < end < len(text) and text[end - 1].isalnum() and text[end].isalnum():
        end += 1
    return start, end


def highlight(
    text: str,
    start: int,
    end: int,
    *,
    weak: bool = False,
    odd: Sequence[tuple[int, int]] = (),
    find: str = "",
) -> str:
    """text as escaped HTML with [start, end) wrapped in <mark class="rageval-hit">.

    start/end are character offsets into text (the kept best-window offsets); -1 (or any
    window that does not fit the text) means no highlight: the whole text, escaped. A window
    that starts or ends inside a word is widened to whole words (word_window). weak: the
    window's score is below the threshold, so it is marked paler (class "rageval-hit weak").
    odd: (start, end) of the figures inside the window that differ from the span's, each
    wrapped in <mark class="rageval-odd"> within the window's mark. find: a search term, each
    occurrence outlined (<span class="rageval-found">), inside or outside the window.
    """
    found = found_ranges(text, find)
    if not (0 <= start < end <= len(text)):
        return _inner(text, 0, len(text), (), found)
    start, end = word_window(text, start, end)
    odd = [(a, b) for a, b in odd if start <= a < b <= end]
    cls, style = (f"{HIT_CLASS} weak", WEAK_STYLE) if weak else (HIT_CLASS, MARK_STYLE)
    middle = _inner(text, start, end, odd, found)
    return (
        f"{_inner(text, 0, start, (), found)}"
        f'<mark class="{cls}" style="{style}">{middle}</mark>'
        f"{_inner(text, end, len(text), (), found)}"
    )


def chunk_card(
    header: str,
    text: str | None,
    start: int,
    end: int,
    covers: bool,
    dimmed: bool = False,
    odd: Sequence[tuple[int, int]] = (),
    find: str = "",
) -> str:
    """One chunk as a bordered block: green left border when it covers a gold span, else grey.

    header is plain text (escaped here); text None shows that the run gave no chunk text. The
    window is marked in full when the chunk covers (its best match reaches the threshold), else
    weakly: the closest text, not a match.
    """
    colour = COVERS_COLOUR if covers else OTHER_COLOUR
    body = (
        '<i style="opacity:0.7">(no chunk text in the run)</i>'
        if text is None
        else highlight(text, start, end, weak=not covers, odd=odd, find=find)
    )
    opacity = "opacity:0.6;" if dimmed else ""
    return (
        f'<div class="rageval-chunk" data-covers="{str(covers).lower()}" '
        f'style="border-left:6px solid {colour};padding:0.4rem 0.8rem;margin:0 0 0.6rem 0;'
        f'background:rgba(128,128,128,0.06);border-radius:4px;{opacity}">'
        f'<div style="font-size:0.85rem;opacity:0.8;margin-bottom:0.25rem">{escape_text(header)}</div>'
        f'<div style="white-space:normal;line-height:1.5">{body}</div></div>'
    )


def text_block(label: str, text: str | None, find: str = "") -> str:
    """A labelled block of user text (query, answer), escaped; an em dash when there is none;
    each occurrence of find (a search term) outlined."""
    value = "—" if text is None else _inner(text, 0, len(text), (), found_ranges(text, find))
    return (
        f'<div style="margin:0 0 0.5rem 0"><span style="font-weight:600">{escape_text(label)}</span>'
        f'<br><span style="line-height:1.5">{value}</span></div>'
    )
