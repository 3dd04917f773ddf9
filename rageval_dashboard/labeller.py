"""The labeller: chunks with their grades, a grade by click or by key, and gold spans marked in
the focused chunk. The Queries page's drilldown and the Labelling page draw it alike.

Keys (Streamlit's button shortcuts: no script, nothing fetched): J / K next / previous chunk,
N / P next / previous query, 0 / 1 / 2 grade the focused chunk and move on, Delete takes your
grade of it back. The focused chunk is outlined, marked aria-current, and said in a live region.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import streamlit as st

from rageval_dashboard import actions, keys
from rageval_dashboard.components import labels as lv
from rageval_dashboard.components.text import escape_text
from rageval_dashboard.state import labelling as sl
from rageval_core.matching.semantic import sentence_spans, windows

#: the keys, as the buttons show them and docs/labelling.md lists them
NEXT_CHUNK, PREV_CHUNK, NEXT_QUERY, PREV_QUERY, TAKE_BACK = "J", "K", "N", "P", "Delete"
#: session key: (list, focus) last scrolled to
SCROLLED = "labels.scrolled"


@dataclass(frozen=True)
class LabelItem:
    """One chunk to label: its query and document, its card (escaped HTML), its imported qrels
    label (None: unjudged) and its text (None: the run gave none)."""

    query_id: str
    doc_id: str
    card: str
    imported: float | None
    text: str | None


def focus_index(list_id: str, n: int, start: int = 0) -> int:
    """The focused chunk of this list: start when the list is new to the session, else the kept
    one, within 0..n-1."""
    ss = st.session_state
    if ss.get(keys.LABEL_LIST) != list_id:
        ss[keys.LABEL_LIST] = list_id
        ss[keys.LABEL_FOCUS] = start
    at = int(ss.get(keys.LABEL_FOCUS, 0))
    at = max(0, min(at, n - 1))
    ss[keys.LABEL_FOCUS] = at
    return at


def _move(to: int) -> None:
    st.session_state[keys.LABEL_FOCUS] = to


def span_choices(text: str | None) -> list[str]:
    """The sentences of a chunk, then its windows of two and three sentences (the semantic
    scorer's splitting): what can be added as a gold span."""
    if not text:
        return []
    sentences = sentence_spans(text)
    pieces = [text[sentences[i][0] : sentences[j - 1][1]] for i, j in windows(sentences)]
    return sorted(dict.fromkeys(pieces), key=lambda p: (p.count(" "), pieces.index(p)))


def key_row(
    items: Sequence[LabelItem],
    at: int,
    on_query: tuple[Callable[[], None] | None, Callable[[], None] | None],
) -> None:
    """The keyboard's buttons: chunk and query moves, the grades of the focused chunk."""
    name = actions.annotator()
    item = items[at]
    prev_query, next_query = on_query
    moves: list[tuple[str, str, Callable[[], None] | None]] = [
        ("Previous query", PREV_QUERY, prev_query),
        ("Previous chunk", PREV_CHUNK, (lambda: _move(at - 1)) if at > 0 else None),
        ("Next chunk", NEXT_CHUNK, (lambda: _move(at + 1)) if at < len(items) - 1 else None),
        ("Next query", NEXT_QUERY, next_query),
    ]
    with st.container(horizontal=True, key="labels.keys"):
        for label, key, then in moves:
            st.button(
                label,
                key=f"labels.{label.lower().replace(' ', '_')}",
                shortcut=key,
                disabled=then is None,
                on_click=then or (lambda: None),
            )
        for grade, meaning in lv.GRADES.items():
            st.button(
                f"{grade} {meaning}",
                key=f"labels.grade{grade}",
                shortcut=str(grade),
                type="primary" if grade == 2 else "secondary",
                disabled=not name,
                on_click=actions.give_grade,
                args=(item.query_id, item.doc_id, grade, at + 1),
            )
        st.button(
            "Take back",
            key="labels.take_back",
            shortcut=TAKE_BACK,
            disabled=not name,
            on_click=actions.give_grade,
            args=(item.query_id, item.doc_id, None, at),
        )


def labeller(
    items: Sequence[LabelItem],
    list_id: str,
    *,
    on_query: tuple[Callable[[], None] | None, Callable[[], None] | None] = (None, None),
    start: int = 0,
) -> int:
    """Draw items with their grades and the keys; returns the focused item's index."""
    if not items:
        return 0
    at = focus_index(list_id, len(items), start)
    name = actions.annotator()
    st.markdown(
        "Grades: "
        + lv.legend()
        + f". Keys: **{NEXT_CHUNK}** / **{PREV_CHUNK}** next / previous chunk, **{NEXT_QUERY}**"
        f" / **{PREV_QUERY}** next / previous query, **0 1 2** grade the outlined chunk and move"
        f" on, **{TAKE_BACK}** takes your grade back."
    )
    if not name:
        st.warning(
            "Set your name under **Annotator** in the sidebar to label: every grade and gold "
            "span is stored with it."
        )
    key_row(items, at, on_query)
    grades = sl.grades(sorted({i.query_id for i in items}))
    lines = [
        lv.grades_line(i.imported, grades.get((i.query_id, i.doc_id), []), name) for i in items
    ]
    said = st.session_state.get(keys.LABEL_SAID)
    focused = items[at]
    st.markdown(
        lv.announcement(
            (f"{said}. " if said else "")
            + f"Chunk {at + 1} of {len(items)} outlined: document {focused.doc_id} of query "
            f"{focused.query_id}; {lines[at]}"
        ),
        unsafe_allow_html=True,
    )
    for i, item in enumerate(items):
        st.markdown(
            lv.labelled_card(item.card, lines[i], i + 1, len(items), i == at, f"rageval-chunk-{i}"),
            unsafe_allow_html=True,
        )
        with st.container(horizontal=True, key=f"labels.row{i}"):
            for grade in lv.GRADES:
                st.button(
                    str(grade),
                    key=f"labels.c{i}.g{grade}",
                    help=f"grade this chunk {lv.grade_name(grade)}",
                    disabled=not name,
                    on_click=actions.give_grade,
                    args=(item.query_id, item.doc_id, grade, i + 1),
                )
            st.button("Focus", key=f"labels.c{i}.focus", on_click=_move, args=(i,))
    span_editor(focused, name)
    follow_focus(list_id, at)
    return at


def follow_focus(list_id: str, at: int) -> None:
    """Scroll the focused chunk into view when a key or click moved the focus within the list
    (not when the list opens: the page stays where the reader is). A script of our own: the
    element id is a number, no user text is in it."""
    ss = st.session_state
    moved = ss.get(SCROLLED) not in (None, (list_id, at)) and ss[SCROLLED][0] == list_id
    ss[SCROLLED] = (list_id, at)
    if moved:
        st.html(
            "<script>window.parent.document.getElementById("
            f'"rageval-chunk-{int(at)}")?.scrollIntoView({{block: "center"}});</script>',
            unsafe_allow_javascript=True,
            width="content",
        )


def span_editor(item: LabelItem, name: str) -> None:
    """Add a sentence or window of the focused chunk as a gold span of its query; the spans
    people added to that query, each with who added it and Remove."""
    st.markdown("**Gold evidence from the outlined chunk**")
    choices = span_choices(item.text)
    if choices:
        c1, c2 = st.columns([5, 1], vertical_alignment="bottom")
        picked = c1.selectbox(
            "A sentence or window of the outlined chunk",
            choices,
            key=f"{keys.LABEL_SPAN}.{item.query_id}.{item.doc_id}",
        )
        c2.button(
            "Add as gold span",
            key="labels.add_span",
            disabled=not name,
            on_click=actions.add_gold_span,
            args=(item.query_id, item.doc_id, picked),
        )
    else:
        st.caption("The outlined chunk has no text to take a span from.")
    added = sl.added_spans(item.query_id)
    if added:
        st.caption(f"Gold spans people added to this query ({len(added)}):")
    for j, span in enumerate(added):
        c1, c2 = st.columns([5, 1], vertical_alignment="center")
        c1.markdown(
            f'<div class="rageval-added">{escape_text(span.text)} '
            f'<span style="opacity:0.7">(added by {escape_text(span.annotator)})</span></div>',
            unsafe_allow_html=True,
        )
        c2.button(
            "Remove",
            key=f"labels.remove{j}",
            on_click=actions.remove_gold_span,
            args=(item.query_id, span.text),
        )
