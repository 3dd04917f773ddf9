"""Relevance labels as the app shows them (pure; no Streamlit calls): the grade scale and its
legend, who gave which grade to a chunk, and the focused chunk's outline and announcement.

Every name and text from the store (annotators, document ids, spans) goes through escape_text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rageval_dashboard.components.text import escape_text
from rageval_core.evaluation.agreement import Agreement, PairAgreement

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


def _num(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


def pairs_rows(a: Agreement) -> dict[str, list[Any]]:
    """The pairs table's columns: who with whom, on how many items, kappa and weighted kappa
    (a dash and the reason where a figure is withheld)."""
    return {
        "a": [p.a for p in a.pairs],
        "b": [p.b for p in a.pairs],
        "items": [p.n for p in a.pairs],
        "kappa": [_num(p.kappa) for p in a.pairs],
        "weighted kappa": [_num(p.weighted_kappa) for p in a.pairs],
        "note": [p.reason or "" for p in a.pairs],
    }


def confusion_rows(p: PairAgreement) -> dict[str, list[Any]]:
    """One pair's confusion: a row per grade of a, a column per grade of b, counts of items."""
    names = [f"{g:g}" for g in p.grades]
    out: dict[str, list[Any]] = {f"{p.a} \\ {p.b}": names}
    for j, name in enumerate(names):
        out[name] = [row[j] for row in p.confusion]
    return out


def alpha_line(a: Agreement) -> str:
    """Krippendorff's alpha with its interval, or why it is withheld (plain text)."""
    if a.alpha is None:
        return f"Krippendorff's alpha (ordinal): withheld, {a.reason}"
    ci = (
        f", 95% interval {a.alpha_ci[0]:.3f} to {a.alpha_ci[1]:.3f}"
        if a.alpha_ci is not None
        else ""
    )
    note = f" ({a.reason})" if a.reason else ""
    return (
        f"Krippendorff's alpha (ordinal): {a.alpha:.3f}{ci}{note}, over {a.n_items:,} items "
        f"graded by two or more of {len(a.annotators)} annotators"
    )


def disagreement_rows(a: Agreement) -> dict[str, list[Any]]:
    """The items the annotators disagree on: query, document, each one's grade, the final one."""
    return {
        "query_id": [d.query_id for d in a.disagreements],
        "doc_id": [d.doc_id for d in a.disagreements],
        "grades": [
            ", ".join(f"{who}: {g:g}" for who, g in sorted(d.grades.items()))
            for d in a.disagreements
        ],
        "final": ["" if d.adjudicated is None else f"{d.adjudicated:g}" for d in a.disagreements],
    }
