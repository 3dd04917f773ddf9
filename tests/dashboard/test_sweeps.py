"""Sweeps page: the swept settings, one setting as a scatter, two as a heat map, many as parallel
coordinates; the best run under a budget named; picking a run opens it on the Overview."""

from __future__ import annotations

import html
from collections.abc import Callable
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from rageval_dashboard import keys
from tests.cli import rageval

REPO = Path(__file__).resolve().parents[2]
SWEEP = sorted((REPO / "tests" / "data" / "sweep").glob("*.jsonl"))
PAGE = "sweeps.py"


@pytest.fixture(scope="module")
def sweep_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("sweep") / "rageval.duckdb"
    done = rageval("import", *map(str, SWEEP), db=db)
    assert done.returncode == 0, done.stderr
    return db


def charts(at: AppTest) -> list[str]:
    return [str(c.proto.spec) for c in at.get("plotly_chart")]


def test_one_two_and_many_settings(make_app: Callable[..., AppTest], sweep_db: Path) -> None:
    at = make_app(PAGE, db=sweep_db)
    assert not at.exception, [e.value for e in at.exception]
    against = at.multiselect(key=keys.SWEEP_SETTINGS)
    assert against.options == ["top_k", "score_threshold", "search_type"]
    assert '"type":"scatter"' in charts(at)[0].replace(" ", "")
    against.set_value(["top_k", "search_type"]).run()
    assert '"type":"heatmap"' in charts(at)[0].replace(" ", "")
    at.multiselect(key=keys.SWEEP_SETTINGS).set_value(
        ["top_k", "score_threshold", "search_type"]
    ).run()
    assert '"type":"parcoords"' in charts(at)[0].replace(" ", "")
    assert not at.exception


def test_the_best_under_a_latency_budget_is_named(
    make_app: Callable[..., AppTest], sweep_db: Path
) -> None:
    at = make_app(PAGE, db=sweep_db, **{keys.SWEEP_Y: "RR"})
    assert "Best RR: sweep-k8-mmr" in html.unescape(at.success[0].value)
    at.selectbox(key=keys.SWEEP_BUDGET_ON).set_value("p95 latency (ms)").run()
    at.number_input(key=keys.SWEEP_BUDGET).set_value(70.0).run()
    best = html.unescape(at.success[0].value)
    assert "sweep-k5-sim" in best and "at most 70" in best


def test_a_picked_run_opens_on_the_overview(
    make_app: Callable[..., AppTest], sweep_db: Path
) -> None:
    at = make_app(PAGE, db=sweep_db)
    at.session_state[keys.SWEEP_PICKED] = "sweep-k5-mmr"
    at.run()
    at.button(key="sweep.open").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.sidebar.selectbox(key=keys.RUN).value == "sweep-k5-mmr"
    links = at.get("page_link")
    assert links and "sweep-k5-mmr on the Overview" in html.unescape(links[0].proto.label)


def test_the_open_button_reads_a_run_name_as_text(
    make_app: Callable[..., AppTest], tmp_path: Path
) -> None:
    """A run's name is user text: in the button's and the link's Markdown labels it forms no
    link, image or emphasis (escaped as every user text on the pages)."""
    db = tmp_path / "named.duckdb"
    assert rageval("import", *map(str, SWEEP), db=db).returncode == 0
    hostile = "**k5** [x](https://example.com) ![i](https://example.com/i.png)"
    assert rageval("rename", "sweep-k5-mmr", hostile, db=db).returncode == 0
    at = make_app(PAGE, db=db)
    at.session_state[keys.SWEEP_PICKED] = hostile
    at.run()
    button = at.button(key="sweep.open")
    for label in (button.label, *(link.proto.label for link in at.get("page_link"))):
        assert not any(c in label for c in "*[]()!"), label
    shown = html.unescape(button.label).replace("\u200b", "")  # the autolink breaker
    assert shown == f"Open {hostile}"
    button.click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.sidebar.selectbox(key=keys.RUN).value == hostile
    (link,) = at.get("page_link")
    assert html.unescape(link.proto.label).replace("\u200b", "") == f"{hostile} on the Overview"


def test_a_store_without_a_sweep_says_so(make_app: Callable[..., AppTest], tmp_path: Path) -> None:
    db = tmp_path / "one.duckdb"
    assert rageval("import", str(SWEEP[0]), db=db).returncode == 0
    at = make_app(PAGE, db=db)
    assert not at.exception, [e.value for e in at.exception]
    assert any("No sweep to show" in i.value for i in at.info)
