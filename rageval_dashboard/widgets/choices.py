"""Widget helpers the pages share: keeping a stored choice valid, picking a page of rows, the
open item mirrored in the URL (?q=, ?compare.query=) so that a shared link opens it, the point
clicked on a chart."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import streamlit as st


def keep_choice(key: str, options: list[str], default: str) -> None:
    """Reset the choice stored under key to default when it is not one of options.

    A choice left from another run or another k (nDCG@10 -> nDCG@5) would make the widget raise.
    """
    if st.session_state.get(key) not in options:
        st.session_state[key] = default


def url_multiselect(
    where: Any, label: str, options: list[str], key: str, default: Sequence[str] = (), **kwargs: Any
) -> list[str]:
    """A multiselect bound to the URL under key, drawn in where (st or a column), whose stored
    choices keep only those still among options (default when nothing was stored): a value left
    from another run or tag would make the widget raise."""
    kept = st.session_state.get(key, list(default))
    st.session_state[key] = [v for v in kept if v in options]
    return list(where.multiselect(label, options, key=key, bind="query-params", **kwargs))


def linked_item(param: str, selected_key: str, mirrored_key: str) -> str | None:
    """The open item under selected_key, which a link's ?<param>= opens when it is not the
    value this page wrote to the URL itself (mirror_item)."""
    link = st.query_params.get(param)
    if link is not None and link != st.session_state.get(mirrored_key):
        st.session_state[selected_key] = link
    return st.session_state.get(selected_key)


def mirror_item(selected: str | None, param: str, mirrored_key: str, hint: str) -> bool:
    """The open item written to the URL under param (a shared link opens it); with none open,
    the parameter taken out and hint shown. True when an item is open."""
    st.session_state[mirrored_key] = selected
    if selected is None:
        st.query_params.pop(param, None)
        st.info(hint)
        return False
    st.query_params[param] = str(selected)
    return True


def at_k(name: str, options: list[str], k: int) -> str:
    """name, or the same measure at k when name is a measure at another cut-off that is no
    longer an option and the one at k is (nDCG@10 -> nDCG@9 after a k move)."""
    if name in options or "@" not in name:
        return name
    moved = f"{name.split('@', 1)[0]}@{k}"
    return moved if moved in options else name


def follow_k(key: str, options: list[str], k: int) -> None:
    """A measure at a cut-off stored under key follows a k move (at_k); anything else is left
    to keep_choice."""
    chosen = st.session_state.get(key)
    if isinstance(chosen, str) and at_k(chosen, options, k) != chosen:
        st.session_state[key] = at_k(chosen, options, k)


def page_picker(n_rows: int, per_page: int, key: str, what: str) -> tuple[slice, int]:
    """(the rows of the page picked, the number of pages) for n_rows shown per_page at a time.

    Only one page of rows goes to the browser. The page number input (under key, labelled
    "Page (of N, <per_page> <what>)") appears only when there is more than one page; a stored
    page beyond the last (the list shrank) becomes the last.
    """
    n_pages = max(1, -(-n_rows // per_page))
    if st.session_state.get(key, 1) > n_pages:
        st.session_state[key] = n_pages
    page_no = 1
    if n_pages > 1:
        page_no = int(
            st.number_input(
                f"Page (of {n_pages:,}, {per_page:,} {what})",
                1,
                n_pages,
                key=key,
                bind="query-params",
            )
        )
    first = (page_no - 1) * per_page
    return slice(first, first + per_page), n_pages


def clicked_point(figure: Any, key: str) -> Any:
    """Draw a plotly figure whose points can be clicked; the clicked point's customdata (its
    first value when a list), or None without a click."""
    event = st.plotly_chart(
        figure, width="stretch", key=key, on_select="rerun", selection_mode="points"
    )
    points = list(event.selection.points) if event is not None else []
    if not points:
        return None
    picked = points[0].get("customdata")
    return picked[0] if isinstance(picked, list) else picked
