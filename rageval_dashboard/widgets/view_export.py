"""Per-view downloads: "Download this view" (the view's numbers as JSON, with the link that
reopens it) and "Download report" (rageval_core.outputs.html_report's self-contained HTML file).

Both are built on click only (callables): a rerun never renders a report nobody asked for.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode, urlsplit, urlunsplit

import streamlit as st

from rageval_dashboard import state
from rageval_dashboard.components.bands import read_bands
from rageval_dashboard.widgets.downloads import report_download, json_download
from rageval_dashboard.components.tables import BANDS, file_stem
from rageval_dashboard.components.text import escape_text
from rageval_dashboard.keys import View
from rageval_core.outputs.html_report import report_html


def view_url() -> str:
    """The link of the view shown: the page's address with every query parameter of the view
    (the sidebar's, the page's widgets' and ?q=). Only the parameters when the address is
    unknown (a test run)."""
    params = urlencode({k: st.query_params.get_all(k) for k in st.query_params}, doseq=True)
    base = str(getattr(st.context, "url", "") or "")
    if not base:
        return f"?{params}" if params else ""
    parts = urlsplit(base)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, params, ""))


def view_document(page: str, view: View, numbers: Any, url: str | None = None) -> dict[str, Any]:
    """The JSON of "Download this view": which page, its link (url, else the view's own), run,
    settings and numbers."""
    return {
        "page": page,
        "url": view_url() if url is None else url,
        "run": view.run.name,
        "settings": view.settings.values(),
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "numbers": numbers,
    }


def view_downloads(
    page: str, view: View, numbers: Callable[[], Any], runs: Sequence[Any] | None = None
) -> None:
    """The two buttons, side by side: this view as JSON, and the HTML report of runs (the
    sidebar's run when None) at the view's settings."""
    chosen = list(runs) if runs else [view.run]
    stem = "_".join(file_stem(r.name) for r in chosen)
    # the link now: the file is built on click, outside the page's run, where neither the
    # address nor the query parameters are known
    url = view_url()
    with st.container(horizontal=True):
        json_download(
            "Download this view (JSON)",
            lambda: view_document(page, view, numbers(), url),
            f"{stem}_{page}_view.json",
            f"{page}.view_json",
        )
        report_download(
            "Download report (HTML)",
            lambda: _report(chosen, view),
            f"{stem}_report.html",
            f"{page}.report_html",
            "a self-contained HTML file (no script, nothing fetched): the runs' metrics at "
            "these settings, to send to someone without rageval",
        )


def _report(runs: Sequence[Any], view: View) -> str:
    loaded = [(state.store(), state.data(View(run=r, settings=view.settings))) for r in runs]
    names = ", ".join(r.name for r in runs)
    return report_html(loaded, settings=view.settings, title=f"rageval report: {names}")


def bands_notice() -> None:
    """A warning when the bands file (.rageval/bands.toml or $RAGEVAL_BANDS) cannot be used."""
    _, problem = read_bands(BANDS)
    if problem:
        st.warning(escape_text(problem, one_line=True), icon="⚠️")
