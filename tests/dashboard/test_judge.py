"""Judge scores on the pages, the Judge page (estimate, launch, the key kept out), the
calibration page, and a new judge set showing without clearing any cache.

The store is left as `rageval judge` leaves it by tests.fakellm.judge_from_recording; launches
go to the fake OpenAI-compatible server on 127.0.0.1 (no network).
"""

from __future__ import annotations

import html
import shutil
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from rageval_core.evaluation.calibration import calibrate
from rageval_core.evaluation.evaluate import evaluate
from rageval_core.evaluation.report import Settings
from rageval_core.judging import JudgeConfig, estimate_judge
from rageval_core.metrics import registry
from rageval_core.rundata import load_run_data
from rageval_core.store import Store
from rageval_core.store import judgements as jstore
from tests.cli import rageval
from tests.fakellm import FakeServer, judge_from_recording

REPO = Path(__file__).resolve().parents[2]
JUDGED = REPO / "tests" / "data" / "judge" / "judged_run.jsonl"
SECRET = "sk-test-never-anywhere-4f1c9e"


@pytest.fixture(scope="module")
def judged_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """judged_run.jsonl imported with the real CLI, judged once from the recorded replies."""
    db = tmp_path_factory.mktemp("judged") / "judged.duckdb"
    done = rageval("import", str(JUDGED), db=db)
    assert done.returncode == 0, done.stderr
    judge_from_recording(db)
    return db


@pytest.fixture()
def fresh_db(judged_db: Path, tmp_path: Path) -> Path:
    """A copy of the judged store a test may write to."""
    db = tmp_path / "judged.duckdb"
    shutil.copy(judged_db, db)
    return db


def _report(db: Path, judge: str | None = None) -> dict[str, float]:
    with Store(db) as store:
        data = load_run_data(store, "judged")
        return dict(evaluate(data, store=store, settings=Settings(judge=judge)).metrics)


def _judge_cards(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric if m.label.startswith("judge.")}


def _job() -> Any:
    """The judge job of the app's store (state.judge_jobs(): one per store, every tab sees it)."""
    from rageval_dashboard import state

    return state.judge_jobs()[state.store_path()]


def _launch(at: AppTest, base_url: str, model: str, concurrency: int = 1) -> Any:
    """Fill in the form's endpoint and model, press Run judge; the job it started."""
    at.text_input(key="judge.base_url").input(base_url)
    at.text_input(key="judge.model").input(model)
    at.number_input(key="judge.concurrency").set_value(concurrency)
    at.button(key="judge.run_button").click().run()
    return _job()


def _closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/v1"


def test_overview_judge_cards_match_the_core(
    make_app: Callable[..., AppTest], judged_db: Path
) -> None:
    expected = {n: f"{v:.3f}" for n, v in _report(judged_db).items() if n.startswith("judge.")}
    assert "judge.faithfulness.supported" in expected and "judge.pass_rate" in expected
    at = make_app(db=judged_db, run="judged")
    assert not at.exception
    assert "Judge" in [h.value for h in at.subheader]
    assert _judge_cards(at) == expected
    # every card says its kind and definition; the lexical ones say lexical
    helps = {m.label: m.help for m in at.metric}
    kind, definition = registry.describe("judge.pass_rate")
    assert helps["judge.pass_rate"] == f"{kind}: {definition}"
    assert helps["AnswerRelevance"].startswith("lexical answer: ")
    table = next(d.value for d in at.dataframe if "description" in d.value.columns)
    kinds = dict(zip(table["metric"], table["kind"], strict=True))
    assert kinds["judge.faithfulness.contradicted"] == "judge"
    assert kinds["HallucinationRate"] == "lexical answer"
    assert {kinds[n] for n in kinds if n.startswith("EvidenceRecall@")} == {"evidence"}


def test_sidebar_judge_select_lists_the_sets_and_none_drops_them(
    make_app: Callable[..., AppTest], judged_db: Path
) -> None:
    at = make_app(db=judged_db, run="judged")
    box = at.selectbox(key="judge")
    with Store(judged_db) as store:
        sets = jstore.judge_sets(store, "judged")
    assert box.options[0].startswith("newest") and box.options[-1].startswith("none")
    assert any(f"#{sets[-1].judge_id} recorded-judge" in o for o in box.options)
    box.set_value("none").run()
    assert not at.exception
    imported = {n: f"{v:.3f}" for n, v in _report(judged_db, "none").items() if "judge." in n}
    assert _judge_cards(at) == imported
    assert "judge.pass_rate" not in imported  # only the set gives it


def test_drilldown_shows_verdicts_escaped_and_outlines_cited_chunks(
    make_app: Callable[..., AppTest], judged_db: Path
) -> None:
    at = make_app("queries.py", db=judged_db, run="judged", q="q4")
    assert not at.exception
    blocks = [m.value for m in at.markdown if "rageval-verdict" in m.value]
    assert len(blocks) == 1
    html = blocks[0]
    faith = html.split('data-prompt="faithfulness"', 1)[1].split("rageval-verdict", 1)[0]
    assert "contradicted" in faith
    # the notes' <b> is text, never markup (an LLM's output is user text)
    assert "<b>" not in html and "&#60;b&#62;not bold&#60;&#47;b&#62;" in html
    table = next(d.value for d in at.dataframe if "query_id" in d.value.columns)
    with Store(judged_db) as store:
        data = load_run_data(store, "judged")
        per_query = evaluate(data, store=store).per_query["judge.faithfulness.contradicted"]
    row = list(table["query_id"]).index("q4")
    assert table["judge.faithfulness.contradicted"].iloc[row] == per_query[3] == 1.0
    cards = [m.value for m in at.markdown if "rageval-chunk" in m.value]
    assert cards and cards[0].count('class="rageval-cited" data-context="1"') == 1


def test_judge_page_estimates_runs_and_never_keeps_the_key(
    make_app: Callable[..., AppTest], fresh_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAGEVAL_TEST_JUDGE_KEY", SECRET)
    at = make_app("judge.py", db=fresh_db, run="judged")
    assert not at.exception
    before = _judge_cards(at)
    with FakeServer() as server:
        at.text_input(key="judge.base_url").input(server.base_url)
        at.text_input(key="judge.model").input("fake-judge")
        at.text_input(key="judge.key_env").input("RAGEVAL_TEST_JUDGE_KEY")
        at.number_input(key="judge.price_in").set_value(0.5)
        at.number_input(key="judge.price_out").set_value(1.5)
        at.button(key="judge.estimate_button").click().run()
        assert not at.exception
        assert server.n_requests == 0  # a dry run sends nothing
        with Store(fresh_db) as store:
            config = JudgeConfig(
                base_url=server.base_url,
                model="fake-judge",
                api_key_env="RAGEVAL_TEST_JUDGE_KEY",
                price_in_per_1k=0.5,
                price_out_per_1k=1.5,
            )
            est = estimate_judge(store, "judged", config)
        shown = " ".join(i.value for i in at.info)
        assert f"{est.requests:,} requests to send" in shown
        assert f"${est.estimated_cost_usd:.4f}" in shown
        at.button(key="judge.run_button").click().run()
        job = _job()
        job.thread.join(60)
        assert not job.thread.is_alive() and job.error is None
        at.run()
        assert not at.exception
        # the key went to the endpoint, and nowhere else
        assert server.state.headers and all(
            h.get("Authorization") == f"Bearer {SECRET}" for h in server.state.headers
        )
        sent = server.n_requests
    assert sent == est.requests
    assert job.summary["requests"] == sent and job.summary["status"] == "complete"
    assert any("complete" in s.value for s in at.success)
    # the session state, the URL and the store's files hold no trace of the key
    state_text = repr(at.session_state)
    assert "RAGEVAL_TEST_JUDGE_KEY" in state_text  # the variable's name is all it keeps
    assert SECRET not in state_text
    assert all(SECRET not in str(v) for v in at.query_params.values())
    at.switch_page("app_pages/overview.py").run()  # the store is let go of when idle
    for path in (fresh_db, Path(str(fresh_db) + ".wal")):
        if path.exists():
            assert SECRET.encode() not in path.read_bytes()
    # the new set is the newest: the Overview shows it without any cache cleared
    after = _judge_cards(at)
    expected = {n: f"{v:.3f}" for n, v in _report(fresh_db).items() if n.startswith("judge.")}
    assert after == expected and after != before


def test_a_judge_set_added_elsewhere_shows_on_the_next_rerun(
    make_app: Callable[..., AppTest], fresh_db: Path
) -> None:
    at = make_app(db=fresh_db, run="judged")
    before = _judge_cards(at)
    from rageval_dashboard import state

    leased = state.store()  # the app's own store object: the test writes as another page would
    with leased.hold():  # type: ignore[attr-defined]
        results = [
            jstore.JudgeResult(
                q, "faithfulness", 0, {"faithfulness": "supported"}, None, 1, 1, 0.0, False
            )
            for q in range(5)
        ]
        facts: dict[str, Any] = {
            "name": "later",
            "model": "m",
            "base_host": "127.0.0.1",
            "prompts": {"faithfulness": "faithfulness-v1"},
            "repeats": 1,
            "status": "complete",
            "requests": 5,
            "cache_hits": 0,
            "judge_errors": 0,
            "prompt_tokens": 5,
            "completion_tokens": 5,
            "cost_usd": 0.0,
        }
        jstore.save_judge_set(leased, "judged", facts, results)
    at.run()
    after = _judge_cards(at)
    assert after["judge.faithfulness.supported"] == "1.000"
    assert before["judge.faithfulness.supported"] != "1.000"
    assert any("later" in o for o in at.selectbox(key="judge").options)


def test_calibration_page_matches_the_core_and_takes_a_label(
    make_app: Callable[..., AppTest], fresh_db: Path
) -> None:
    with Store(fresh_db) as store:
        c = calibrate(store, "judged")
    at = make_app("calibration.py", db=fresh_db, run="judged")
    assert not at.exception
    values = {m.label: m.value for m in at.metric}
    assert values["Cohen's kappa"] == f"{c.kappa:.3f}"
    assert values["Observed agreement"] == f"{c.agreement:.3f}"
    charts = [el.proto.id for el in at.get("plotly_chart")]
    assert any(i.endswith("calibration.confusion") for i in charts)
    assert any(i.endswith("calibration.thresholds") for i in charts)
    # people change their mind on one query where they agreed with the judge: kappa moves
    agree = c.query_ids[
        next(i for i, (h, j) in enumerate(zip(c.human, c.judged, strict=True)) if h == j)
    ]
    judge_label = c.judged[c.query_ids.index(agree)]
    other = next(lab for lab in ("supported", "contradicted") if lab != judge_label)
    at.selectbox(key="calibration.query").set_value(agree).run()
    qidx = [str(q) for q in at.selectbox(key="calibration.query").options].index(agree)
    at.selectbox(key=f"calibration.give.{qidx}").set_value(other).run()
    at.button(key="calibration.save").click().run()
    assert not at.exception
    at.run()
    from rageval_dashboard import state

    leased = state.store()
    with leased.hold():  # type: ignore[attr-defined]
        again = calibrate(leased, "judged")
        assert jstore.human_labels(leased, "judged")[qidx]["faithfulness"] == other
    assert again.agreement < c.agreement
    values = {m.label: m.value for m in at.metric}
    assert values["Observed agreement"] == f"{again.agreement:.3f}"


def test_compare_shows_judge_rows_with_their_kind(
    make_app: Callable[..., AppTest], fresh_db: Path, tmp_path: Path
) -> None:
    from rageval_core.compare import compare
    from rageval_core.judging import run_judge

    other = tmp_path / "judged2.jsonl"
    text = JUDGED.read_text(encoding="utf-8").replace('"name": "judged"', '"name": "judged2"')
    other.write_text(text.replace("The standard rate is 20% [1].", "It is 17.5%."), "utf-8")
    assert rageval("import", str(other), db=fresh_db).returncode == 0
    with FakeServer() as server, Store(fresh_db) as store:  # its own judge: the fake's verdicts
        run_judge(store, "judged2", JudgeConfig(base_url=server.base_url, model="f"), api_key="")
        c = compare([load_run_data(store, n) for n in ("judged", "judged2")], store=store)
    expected = {t.metric: t.diff for t in c.tests if t.metric.startswith("judge.")}
    assert "judge.faithfulness.supported" in expected
    at = make_app("compare.py", db=fresh_db, run="judged")
    assert not at.exception
    table = next(d.value for d in at.dataframe if {"kind", "delta"} <= set(d.value.columns))
    rows = table[table["metric"].astype(str).str.startswith("judge.")]
    assert set(rows["kind"]) == {"judge"}
    shown = dict(zip(rows["metric"], rows["delta"], strict=True))
    assert shown.keys() == expected.keys()
    for name, diff in expected.items():
        assert shown[name] == pytest.approx(diff), name


def test_cancel_keeps_what_finished(make_app: Callable[..., AppTest], fresh_db: Path) -> None:
    at = make_app("judge.py", db=fresh_db, run="judged")
    with FakeServer() as server:
        server.state.delay_s = 2.0  # a slow model: the cancel lands mid-run
        job = _launch(at, server.base_url, "slow-judge")
        assert job.running
        for _ in range(600):  # the first reply (2 s), so the cancel lands mid-run
            if job.snapshot()[0] >= 1 or not job.running:
                break
            time.sleep(0.1)
        at.run()
        at.button(key="judge.cancel").click().run()
        assert job.cancel.is_set()
        job.thread.join(60)
        assert not job.thread.is_alive()
    assert job.error is None and job.summary is not None
    assert job.summary["status"] == "cancelled", str(job.summary)
    assert 1 <= job.summary["done"] < job.summary["tasks"]
    assert job.summary["done"] < job.summary["tasks"]
    at.run()
    from rageval_dashboard import state

    leased = state.store()
    with leased.hold():  # type: ignore[attr-defined]
        kept = jstore.judge_set(leased, "judged")
        results = jstore.judge_results(leased, kept)
    # what finished before the cancel is kept as a set of its own
    assert kept.name == "slow-judge" and kept.status == "cancelled"
    assert len(results) == job.summary["done"]


def test_judge_page_lists_the_items_a_judge_disagrees_with_itself_on(
    make_app: Callable[..., AppTest], fresh_db: Path
) -> None:
    from rageval_core.judging import repeatability, run_judge

    flaky = "Who audits charities?"
    with FakeServer() as server, Store(fresh_db) as store:
        # the second look at one question changes its mind; every other answer is stable
        server.state.flip = lambda q, n: "contradicted" if q == flaky and n == 1 else "supported"
        config = JudgeConfig(
            base_url=server.base_url, model="twice", metrics=("faithfulness",), repeats=2
        )
        run_judge(store, "judged", config, api_key="")
        rep = repeatability(store, "judged")
    assert [(d.qidx, d.key) for d in rep.disagreements] == [(1, "faithfulness")]
    at = make_app("judge.py", db=fresh_db, run="judged")
    assert not at.exception
    sets = next(d.value for d in at.dataframe if "cache hits" in d.value.columns)
    assert list(sets["name"])[:2] == ["twice", "recorded-judge"]  # newest first
    assert list(sets["repeats"])[:1] == [2]
    agreement = next(d.value for d in at.dataframe if next(iter(d.value.columns)) == "key")
    assert dict(zip(agreement["key"], agreement["agreement"], strict=True)) == pytest.approx(
        rep.agreement
    )
    dis = next(d.value for d in at.dataframe if "values" in d.value.columns)
    assert list(dis["query_id"]) == ["q2"] and list(dis["key"]) == ["faithfulness"]
    assert sorted(dis["values"].iloc[0].split(", ")) == ["contradicted", "supported"]


def test_a_running_judge_shows_its_progress_in_any_tab_that_opens_the_page(
    make_app: Callable[..., AppTest], fresh_db: Path
) -> None:
    first = make_app("judge.py", db=fresh_db, run="judged")
    with FakeServer() as server:
        server.state.go.clear()  # the model answers nothing until the end of the test
        job = _launch(first, server.base_url, "slow-judge")
        assert job.running
        # another tab, its own session (wait=False: the judge's progress bar is no rescoring)
        other = make_app("judge.py", db=fresh_db, run="judged", wait=False)
        assert not other.exception
        texts = [html.unescape(p.proto.text) for p in other.progress]
        assert job.running, (job.error, job.summary)  # still under way while the other tab looked
        assert any(t.startswith("Judging (slow-judge on judged): ") for t in texts), texts
        # that tab can launch nothing while the run goes on, and can cancel it
        assert other.button(key="judge.run_button").disabled
        other.button(key="judge.cancel").click().run()
        assert job.cancel.is_set()
        server.state.go.set()
        job.thread.join(60)
    other.run()
    assert not other.progress
    assert any("cancelled (slow-judge on judged)" in html.unescape(w.value) for w in other.warning)


def test_a_judge_that_gets_no_answer_shows_failed_and_is_never_picked(
    make_app: Callable[..., AppTest], fresh_db: Path
) -> None:
    at = make_app(db=fresh_db, run="judged")
    before = _judge_cards(at)
    assert before  # the recorded judge's cards
    at.switch_page("app_pages/judge.py").run()
    job = _launch(at, _closed_port_url(), "nobody-home", concurrency=4)
    job.thread.join(60)
    at.run()
    assert not at.exception
    assert job.summary["status"] == "failed"
    cause = job.summary["cause"]
    assert cause and "refused the connection" in cause
    shown = [html.unescape(e.value) for e in at.error]
    assert len(shown) == 1 and shown[0].startswith("Judge run failed (nobody-home on judged)")
    assert " ".join(shown).count("refused the connection") == 1  # the cause, once
    assert not any("nobody-home" in s.value for s in at.success)
    sets = next(d.value for d in at.dataframe if "cache hits" in d.value.columns)
    row = sets[sets["name"] == "nobody-home"].iloc[0]
    assert row["status"] == "failed" and row["verdicts"] == 0
    # the sidebar's default still reads the set with verdicts: the Overview is unchanged
    options = at.selectbox(key="judge").options
    assert any("nobody-home" in o and "failed, 0 verdicts" in o for o in options)
    at.switch_page("app_pages/overview.py").run()
    assert not at.exception
    assert _judge_cards(at) == before


def test_the_judge_form_says_what_it_will_do(
    make_app: Callable[..., AppTest], fresh_db: Path
) -> None:
    at = make_app("judge.py", db=fresh_db, run="judged")
    for key, label in (("judge.base_url", "Base URL"), ("judge.model", "Model")):
        box = at.text_input(key=key)
        # visibly empty and required: no example value greyed in to look filled in
        assert box.value == "" and box.proto.placeholder == ""
        assert box.proto.label == f"{label} (required)"

    def said() -> str:
        return html.unescape(" ".join(e.value for e in at.error))

    at.button(key="judge.estimate_button").click().run()
    assert "Base URL is empty" in said() and "--" not in said()
    with FakeServer() as server:
        at.text_input(key="judge.base_url").input(server.base_url)
        at.button(key="judge.estimate_button").click().run()
        assert "Model is empty" in said() and "--" not in said()
        at.text_input(key="judge.model").input("fake-judge")
        at.number_input(key="judge.max_cost").set_value(1.0)
        at.button(key="judge.estimate_button").click().run()
        assert "Budget needs the judge's prices: give Price in and Price out" in said()
        assert "--" not in said()
        at.number_input(key="judge.max_cost").set_value(0.0)
        # no prices given: the run's own (its generator's, 0.5 / 1.5) are never taken for them
        at.button(key="judge.estimate_button").click().run()
        assert not at.error
        line = " ".join(i.value for i in at.info if "Dry run" in i.value)
        assert "cost unknown: give the judge's prices (Price in, Price out)" in line
        assert "$" not in line
        at.number_input(key="judge.price_in").set_value(2.0)
        at.number_input(key="judge.price_out").set_value(4.0)
        at.button(key="judge.estimate_button").click().run()
        with Store(fresh_db) as store:
            config = JudgeConfig(
                base_url=server.base_url,
                model="fake-judge",
                price_in_per_1k=2.0,
                price_out_per_1k=4.0,
            )
            est = estimate_judge(store, "judged", config)
        line = " ".join(i.value for i in at.info if "Dry run" in i.value)
        assert est.estimated_cost_usd and f"estimated cost ${est.estimated_cost_usd:.4f}" in line
        assert server.n_requests == 0


def test_calibration_page_gives_no_threshold_at_chance(
    make_app: Callable[..., AppTest], fresh_db: Path
) -> None:
    """The recorded judge fails one query whose gold span is quoted verbatim: coverage says yes
    for every query at every threshold, kappa 0 (a constant verdict). No "Use threshold" button
    (it offered 0.50), and the page says why."""
    with Store(fresh_db) as store:
        c = calibrate(store, "judged")
    assert c.best_agreeing is not None and c.best_agreeing.kappa == 0.0
    assert c.best_threshold is None
    at = make_app("calibration.py", db=fresh_db, run="judged")
    assert not at.exception, [e.value for e in at.exception]
    assert not [b for b in at.button if b.key == "calibration.use_threshold"]
    info = " ".join(i.value for i in at.info)
    assert "No threshold agrees with the judge better than chance with confidence" in info
    assert "0.500-0.500" in info
