"""Every view's state is in the URL: a link restores the Queries filters and sort, Compare's
runs, candidate, metric and open query, and the Runs page's tab."""

from __future__ import annotations

from collections.abc import Callable

from streamlit.testing.v1 import AppTest

from rageval_dashboard import keys
from tests.dashboard.conftest import url_param


def test_a_queries_link_restores_the_view(make_app: Callable[..., AppTest]) -> None:
    first = make_app("queries.py")
    sorts = first.selectbox(key=keys.QUERIES_SORT).options
    at = make_app(
        "queries.py",
        **{
            keys.QUERIES_FAILING: "true",
            keys.QUERIES_SEARCH: "q",
            keys.QUERIES_SORT: sorts[-1],
            keys.QUERIES_SEARCH_ALL: "true",
        },
    )
    assert not at.exception
    assert at.toggle(key=keys.QUERIES_FAILING).value is True
    assert at.toggle(key=keys.QUERIES_SEARCH_ALL).value is True
    assert at.text_input(key=keys.QUERIES_SEARCH).value == "q"
    assert at.selectbox(key=keys.QUERIES_SORT).value == sorts[-1]


def test_a_compare_link_restores_baseline_and_candidates(
    make_app: Callable[..., AppTest],
) -> None:
    # the sidebar's run is bm25; the link asks for another baseline and one candidate
    at = make_app(
        "compare.py",
        **{keys.COMPARE_BASELINE: "hybrid_rerank", keys.COMPARE_CANDIDATES: "tfidf_char"},
    )
    assert not at.exception
    assert at.selectbox(key=keys.COMPARE_BASELINE).value == "hybrid_rerank"
    assert at.multiselect(key=keys.COMPARE_CANDIDATES).value == ["tfidf_char"]
    # a rerun keeps the link's view (the baseline does not snap back to the sidebar's run)
    at.run()
    assert at.selectbox(key=keys.COMPARE_BASELINE).value == "hybrid_rerank"


def test_the_side_by_side_query_goes_into_the_url(make_app: Callable[..., AppTest]) -> None:
    # bound widgets write the URL in the browser (tests/e2e/test_url_state.py); the open
    # query is mirrored by the page itself, which AppTest sees
    at = make_app("compare.py")
    at.session_state[keys.COMPARE_SECTION] = "Per query"  # the tab holding the side by side
    at.run()
    regressed = at.selectbox(key=keys.COMPARE_REGRESSED)
    assert len(regressed.options) > 1, "the sample runs have regressed queries"
    qid = regressed.options[1]
    regressed.set_value(qid).run()
    assert not at.exception
    assert url_param(at, keys.COMPARE_QUERY) == qid


def test_a_compare_link_opens_its_query(make_app: Callable[..., AppTest]) -> None:
    at = make_app("compare.py", **{keys.COMPARE_QUERY: "no-such-query"})
    assert not at.exception
    assert any("not in both runs" in i.value for i in at.info)


def test_the_runs_tab_is_in_the_url(make_app: Callable[..., AppTest]) -> None:
    at = make_app("runs.py", **{keys.RUNS_TAB: "From a path"})
    assert not at.exception
    assert at.tabs[1].label == "From a path"
