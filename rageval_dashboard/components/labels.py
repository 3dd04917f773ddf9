"""Relevance labels as the app shows them (pure; no Streamlit calls): the grade scale and its
legend, who gave which grade to a chunk, and the focused chunk's outline and announcement.

Every name and text from the store (annotators, document ids, spans) goes through escape_text.
"""

from __future__ import annotations

from collections.abc import Sequence

from rageval_dashboard.components.text import escape_text

#: the scale people label on (docs/labelling.md): the digit key gives the grade
GRADES = {0: "not relevant", 1: "partly relevant", 2: "relevant"}
FOCUS_CLASS = "rageval-focus"
FOCUS_STYLE = "outline:3px solid #2563eb;outline-offset:2px;border-radius:6px"


def grade_name(grade: float) -> str:
    """'2 relevant'; a grade off the scale (an imported qrels label) as its number."""
    g = int(grade) if float(grade).is_integer() else grade
    return f"{g:g} {GRADES[int(g)]}" if g in GRADES else f"{g:g}"


def legend() -> str:
    """The scale as one line of Markdown (our own words)."""
    return " · ".join(f"**{g}** {name}" for g, name in GRADES.items())


def grades_line(imported: float | None, given: Sequence[tuple[str, str, float]], me: str) -> str:
    """Plain text: the chunk's imported qrels label, then each (source, annotator, grade) given
    in the app, the current annotator's as "yours"."""
    parts = ["qrels: " + ("unjudged" if imported is None else grade_name(imported))]
    for source, annotator, grade in given:
        who = "yours" if source == "people" and annotator == me else f"{annotator} ({source})"
        parts.append(f"{who}: {grade_name(grade)}")
    return " · ".join(parts)


def labelled_card(
    card: str, grades: str, position: int, total: int, focused: bool, anchor: str
) -> str:
    """A chunk card with its grades under it; the focused one outlined and marked for assistive
    technology (aria-current, a label naming its place and grades). anchor: the element id."""
    label = escape_text(f"chunk {position} of {total}; {grades}", one_line=True)
    focus = f' class="{FOCUS_CLASS}" aria-current="true" style="{FOCUS_STYLE}"' if focused else ""
    return (
        f'<div id="{anchor}" role="group" aria-label="{label}"{focus}'
        f' data-focused="{str(focused).lower()}">{card}'
        f'<div class="rageval-grades" style="font-size:0.85rem;margin:-0.4rem 0 0.6rem 0.4rem">'
        f"{escape_text(grades)}</div></div>"
    )


def announcement(text: str) -> str:
    """A polite live region: a screen reader reads text when it changes (the focus moved, a
    label was given)."""
    return (
        '<div class="rageval-said" role="status" aria-live="polite" '
        f'style="font-size:0.9rem;opacity:0.85">{escape_text(text)}</div>'
    )
