"""The Overview says what the CLI says: on a run shallower than the default k the CLI's numbers
at the CLI's k and the same note that k exceeds the run's depth; warnings about its own cards."""

from __future__ import annotations

import html
import json
from collections.abc import Callable
from pathlib import Path

from streamlit.testing.v1 import AppTest

from tests.cli import rageval
from tests.core.cli.test_cli_truths import DEPTH_WARNING, lenient_run, shallow_run


def shallow_db(tmp_path: Path, depth: int = 4) -> Path:
    run = shallow_run(tmp_path / f"depth{depth}.jsonl", depth)
    db = tmp_path / f"depth{depth}.duckdb"
    assert rageval("import", str(run), db=db).returncode == 0
    return db


def test_default_k_and_numbers_equal_the_cli_on_a_shallow_run(
    make_app: Callable[..., AppTest], tmp_path: Path
) -> None:
    db = shallow_db(tmp_path)
    cli = json.loads(rageval("evaluate", "shallow", "--json", db=db).stdout)
    at = make_app(db=db)
    assert not at.exception, [e.value for e in at.exception]
    slider = at.sidebar.slider(key="k")
    assert slider.value == 10 and slider.max == 10  # not capped at the depth (4)
    shown = {m.label: m.value for m in at.metric}
    assert shown["P@10"] == f"{cli['metrics']['P@10']:.3f}" == "0.100"
    assert "P@4" not in shown
    (warning,) = [w.value for w in at.warning]
    assert warning == DEPTH_WARNING[0].upper() + DEPTH_WARNING[1:] + "."
    assert cli["warnings"] == [DEPTH_WARNING]


def test_k_within_the_depth_has_no_depth_note(
    make_app: Callable[..., AppTest], tmp_path: Path
) -> None:
    db = shallow_db(tmp_path)
    at = make_app(db=db)
    at.sidebar.slider(key="k").set_value(4).run()
    assert not at.exception
    assert not [w.value for w in at.warning if "depth" in w.value]
    assert {m.label: m.value for m in at.metric}["P@4"] == "0.250"
    # a run deeper than the default: the slider reaches its depth
    at = make_app(db=shallow_db(tmp_path, depth=12))
    assert at.sidebar.slider(key="k").max == 12
    assert not [w.value for w in at.warning if "depth" in w.value]


def test_the_overview_warning_speaks_about_its_cards(
    make_app: Callable[..., AppTest], tmp_path: Path
) -> None:
    """The lenient-threshold warning beside cards over other queries: it gives the card's own
    value and queries, in the words of the counts caption."""
    run = lenient_run(tmp_path / "lenient.jsonl")
    db = tmp_path / "lenient.duckdb"
    assert rageval("import", str(run), db=db).returncode == 0
    at = make_app(db=db, k="1")
    assert not at.exception, [e.value for e in at.exception]
    shown = {m.label: m.value for m in at.metric}
    assert shown["R@1"] == "0.333" and shown["EvidenceRecall@1"] == "1.000"
    caption = " ".join(c.value for c in at.caption)
    assert "6 scored on relevant ids" in caption and "4 scored on gold evidence" in caption
    (warning,) = [w.value for w in at.warning if "lenient" in w.value]
    assert "on the 4 queries scored on relevant ids and on gold evidence" in warning
    assert "the reported R@1, 0.333, is over all 6 scored on relevant ids" in warning


def test_compare_shows_the_depth_note_of_the_shallow_run(
    make_app: Callable[..., AppTest], tmp_path: Path
) -> None:
    """Compare at the default k over a depth-10 and a depth-4 run: the note the Overview and the
    CLI give, for the shallow run only; none at k = 4."""
    deep = tmp_path / "deep.jsonl"
    deep.write_text(
        shallow_run(tmp_path / "d.jsonl", 10).read_text().replace('"shallow"', '"deep"')
    )
    db = tmp_path / "two.duckdb"
    shallow = shallow_run(tmp_path / "shallow.jsonl")
    assert rageval("import", str(deep), str(shallow), db=db).returncode == 0
    at = make_app("compare.py", db=db, run="deep")
    assert not at.exception, [e.value for e in at.exception]
    notes = [html.unescape(w.value) for w in at.warning if "depth" in w.value]
    assert notes == [f"shallow: {DEPTH_WARNING}."]
    at.sidebar.slider(key="k").set_value(4).run()
    assert not [w.value for w in at.warning if "depth" in w.value]
