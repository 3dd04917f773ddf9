"""The tat-rag and eggai presets equal the re-implemented scripts (the oracles) to 1e-9.

On the real inputs of ../shared/parity (marker parity) and on small hand-built files, at the
scripts' defaults and at other thresholds and score cut-offs; run values and per-query values,
through the Python API and the CLI's JSON.
"""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path
from typing import Any

import pytest

import rageval as rv
from rageval_core.errors import UsageError
from rageval_core.settings.presets import PRESETS
from rageval_core.settings.schema import DEFAULTS
from tests.cli import rageval
from tests.core.parity import oracle_eggai as E
from tests.core.parity import oracle_tatrag as T
from tests.paths import PARITY

TOL = 1e-9


def unzip(name: str, into: Path) -> Path:
    out = into / name.removesuffix(".gz")
    out.write_bytes(gzip.decompress((PARITY / name).read_bytes()))
    return out


def write(path: Path, value: Any) -> Path:
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


def same(a: float | None, b: float | None) -> bool:
    if a is None or b is None or (isinstance(a, float) and math.isnan(a)):
        return (a is None or math.isnan(a)) and (b is None or math.isnan(b))
    return abs(a - b) <= TOL


def check(report: Any, expected: dict[str, float], rows: list[dict[str, Any]]) -> None:
    assert list(report.metrics) == list(expected)
    for name, value in expected.items():
        assert same(report.metrics[name], value), (name, report.metrics[name], value)
    for name in expected:
        got = report.per_query[name].tolist()
        if name == "best_match_position":
            want = [math.nan if r[name] is None else float(r[name]) for r in rows]
        elif not name.startswith("hit_rate_top_"):
            want = [r[name] for r in rows]
        else:  # the reporter's per-case view: the best position is at most k
            k = int(name.rsplit("_", 1)[1])
            want = [
                1.0
                if r["best_match_position"] is not None and r["best_match_position"] <= k
                else 0.0
                for r in rows
            ]
        assert len(got) == len(want)
        bad = [(i, g, w) for i, (g, w) in enumerate(zip(got, want, strict=True)) if not same(g, w)]
        assert not bad, (name, bad[:5])


# --- the real inputs --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tatrag(tmp_path_factory: pytest.TempPathFactory) -> Any:
    if not PARITY.is_dir():
        pytest.skip("no parity inputs")  # the parity marker fails in CI instead
    d = tmp_path_factory.mktemp("tatrag")
    out, gold = unzip("tatrag_bm25_output.json.gz", d), unzip("tatrag_golden_set.json.gz", d)
    with rv.load([out, gold], format="tatrag") as run:
        yield run, json.loads(gold.read_text()), json.loads(out.read_text()), (out, gold)


@pytest.fixture(scope="module")
def eggai(tmp_path_factory: pytest.TempPathFactory) -> Any:
    if not PARITY.is_dir():
        pytest.skip("no parity inputs")
    d = tmp_path_factory.mktemp("eggai")
    res = unzip("eggai_bm25_results.json.gz", d)
    pairs = unzip("eggai_filtered_qa_pairs.json.gz", d)
    with rv.load([res, pairs], format="qa_pairs") as run:
        yield run, json.loads(pairs.read_text()), json.loads(res.read_text()), (res, pairs)


@pytest.mark.parity
@pytest.mark.parametrize(
    ("threshold", "cut"), [(None, None), (0.5, None), (0.85, 15.0), (0.7, 0.0), (0.6, 25.0)]
)
def test_tatrag_preset_equals_the_script(
    tatrag: Any, threshold: float | None, cut: float | None
) -> None:
    run, golden, output, _ = tatrag
    overrides: dict[str, Any] = {}
    if threshold is not None:
        overrides["threshold"] = threshold
    if cut is not None:
        overrides["score_threshold"] = cut
    report = rv.evaluate(run, preset="tat-rag", **overrides)
    rows = T.per_query(golden, output, threshold or 0.7, 0.1 if cut is None else cut)
    check(report, T.summary(rows), rows)


@pytest.mark.parity
@pytest.mark.parametrize(
    ("threshold", "cut"), [(None, None), (0.3, None), (0.7, None), (0.9, None), (0.5, 10.0)]
)
def test_eggai_preset_equals_the_script(
    eggai: Any, threshold: float | None, cut: float | None
) -> None:
    run, pairs, results, _ = eggai
    extra: dict[str, Any] = {} if threshold is None else {"threshold": threshold}
    if cut is not None:
        extra["score_threshold"] = cut
    report = rv.evaluate(run, preset="eggai", **extra)
    rows = E.per_query(pairs, results, threshold or 0.5, cut)
    check(report, E.summary(rows), rows)


@pytest.mark.parity
def test_cli_json_per_query(tatrag: Any, eggai: Any) -> None:
    _, golden, output, (out, gold) = tatrag
    r = rageval(
        "evaluate", str(out), str(gold), "--format", "tatrag", "--preset", "tat-rag",
        "--threshold", "0.6", "--score-threshold", "12", "--json", "--per-query",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    rows = T.per_query(golden, output, 0.6, 12.0)
    assert list(got["metrics"]) == list(T.NAMES)
    for name, value in T.summary(rows).items():
        assert same(got["metrics"][name], value), name
    per_query = list(got["per_query"].values())
    for row, want in zip(per_query, rows, strict=True):
        assert all(same(row[n], want[n]) for n in T.NAMES)

    _, pairs, results, (res, qa) = eggai
    r = rageval(
        "evaluate", str(res), str(qa), "--format", "qa_pairs", "--preset", "eggai", "--json"
    )
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    expected = E.summary(E.per_query(pairs, results))
    assert list(got["metrics"]) == list(E.NAMES)
    assert all(same(got["metrics"][n], v) for n, v in expected.items())


# --- small cases built by hand ----------------------------------------------------------------


def doc(content: str, score: float = 1.0, **meta: object) -> dict[str, object]:
    return {
        "id": f"d{abs(hash(content)) % 10**8}",
        "content": content,
        "score": score,
        "metadata": meta,
    }


SPAN = "Revenue grew by 10 percent in 2019 because of new products"
TAT_GOLDEN = [
    {"query": "q one", "gold": [{"content": SPAN, "type": "TEXT"}, {"content": SPAN}]},
    {
        "query": "q two",
        "gold": [{"content": "TAT-RAG/csvs/Acme_page_3_table_1.csv", "type": "FILE"}],
    },
    {
        "query": "q three",
        "gold": [{"content": "net income fell sharply"}, {"content": "a/b/c.csv", "type": "FILE"}],
    },
    {"query": "q four", "gold": [{"content": "nothing will match this span at all"}]},
    {"query": "q one", "gold": [{"content": "cash and cash equivalents were 48,881"}]},
]
TAT_OUTPUT = [
    [
        doc("grew by 10 percent", 3.0),
        doc("unrelated", 2.0),
        doc("revenue  GREW by 10 percent in 2019 because of new products", 0.05),
    ],
    [
        doc("x", 5.0, table_path="csvs/acme_page_3_table_1.csv"),
        doc("y", 4.0),
        doc("z", 0.2, tags=["ACME_page_3_table_1.csv"]),
    ],
    [doc("Net income fell sharply in 2020", 9.0, source="c.csv"), doc("net income fell", 8.0)],
    [],
    [doc("cash and cash equivalents were 48,811", 1.0), doc("", 0.5)],
]


@pytest.mark.parametrize(("threshold", "cut"), [(0.7, 0.1), (0.5, 0.1), (0.95, 0.0), (0.7, 2.5)])
def test_tatrag_preset_on_small_cases(tmp_path: Path, threshold: float, cut: float) -> None:
    out = write(tmp_path / "out.json", TAT_OUTPUT)
    gold = write(tmp_path / "golden.json", TAT_GOLDEN)
    with rv.load([out, gold], format="tatrag") as run:
        report = rv.evaluate(run, preset="tat-rag", threshold=threshold, score_threshold=cut)
    rows = T.per_query(TAT_GOLDEN, TAT_OUTPUT, threshold, cut)
    check(report, T.summary(rows), rows)


EGG_PAIRS = [
    {
        "qa_pair_id": "A",
        "question": "qa",
        "answer": "x",
        "context": "The  premium is due monthly.",
        "source_document": "a.md",
    },
    {
        "qa_pair_id": "B",
        "question": "qb",
        "answer": "x",
        "context": "Claims within 30 days",
        "source_document": "b.md",
    },
    {
        "qa_pair_id": "C",
        "question": "qc",
        "answer": "x",
        "context": "Nothing here",
        "source_document": "c.md",
    },
    {
        "qa_pair_id": "D",
        "question": "qd",
        "answer": "x",
        "context": "tie tie",
        "source_document": "d.md",
    },
]
EGG_RESULTS = [
    {
        "qa_pair_id": "A",
        "results": [
            {"id": "1", "text": "the premium is due monthly."},
            {"id": "2", "text": " THE  PREMIUM IS DUE MONTHLY. "},
        ],
    },
    {
        "qa_pair_id": "B",
        "results": [
            {"id": str(i), "text": t}
            for i, t in enumerate(
                [
                    "zzz",
                    "claims within 30 days apply",
                    "claims",
                    "x",
                    "y",
                    "Claims within 30 days",
                    "q",
                ]
            )
        ],
    },
    {"qa_pair_id": "C", "results": []},
    {
        "qa_pair_id": "D",
        "results": [
            {"id": "a", "text": "tie tie"},
            {"id": "b", "text": "tie tie"},
            {"id": "c", "text": "tie"},
        ],
    },
]


@pytest.mark.parametrize("threshold", [0.5, 0.3, 0.8, 1.0])
def test_eggai_preset_on_small_cases(tmp_path: Path, threshold: float) -> None:
    res = write(tmp_path / "results.json", EGG_RESULTS)
    pairs = write(tmp_path / "pairs.json", EGG_PAIRS)
    with rv.load([res, pairs], format="qa_pairs") as run:
        report = rv.evaluate(run, preset="eggai", threshold=threshold)
    rows = E.per_query(EGG_PAIRS, EGG_RESULTS, threshold)
    check(report, E.summary(rows), rows)


def test_preset_refuses_other_metrics_and_by(tmp_path: Path) -> None:
    res = write(tmp_path / "results.json", EGG_RESULTS)
    pairs = write(tmp_path / "pairs.json", EGG_PAIRS)
    with rv.load([res, pairs], format="qa_pairs") as run:
        with pytest.raises(UsageError, match="reports"):
            rv.evaluate(run, ["nDCG@10"], preset="eggai")
        assert list(rv.evaluate(run, ["mrr_score"], preset="eggai").metrics) == ["mrr_score"]


# --- why the numbers differ -------------------------------------------------------------------


@pytest.mark.parametrize("name", ["tat-rag", "eggai"])
def test_explanation_runs_from_rageval_defaults_to_the_preset(tmp_path: Path, name: str) -> None:
    if name == "tat-rag":
        files = [write(tmp_path / "o.json", TAT_OUTPUT), write(tmp_path / "g.json", TAT_GOLDEN)]
        fmt = "tatrag"
    else:
        files = [write(tmp_path / "r.json", EGG_RESULTS), write(tmp_path / "p.json", EGG_PAIRS)]
        fmt = "qa_pairs"
    with rv.load(files, format=fmt) as run:
        explanation = rv.explain_preset(run, name)
        preset = rv.evaluate(run, preset=name)
        own = rv.evaluate(
            run, sorted(set(PRESETS[name].counterparts.values())), relevance="evidence"
        )
    first, last = explanation.steps[0].metrics, explanation.steps[-1].metrics
    assert explanation.steps[0].setting == "defaults"
    assert all(same(last[n], v) for n, v in preset.metrics.items())
    # the first step is rageval's own metrics (float32 pair scores there: 1e-6)
    for metric, counterpart in PRESETS[name].counterparts.items():
        assert abs(first[metric] - own.metrics[counterpart]) <= 1e-6, metric
    switched = [st.setting for st in explanation.steps[1:]]
    assert set(switched) == {k for k, v in PRESETS[name].values.items() if v != DEFAULTS[k]}
    data = explanation.to_json()
    assert data["preset_values"] == last and len(data["steps"]) == len(explanation.steps)


def test_explanation_cli_keeps_given_flags(tmp_path: Path) -> None:
    out, gold = write(tmp_path / "o.json", TAT_OUTPUT), write(tmp_path / "g.json", TAT_GOLDEN)
    args = ["evaluate", str(out), str(gold), "--format", "tatrag", "--explain-preset", "tat-rag"]
    r = rageval(*args)
    assert r.returncode == 0, r.stderr
    assert "rageval defaults" in r.stdout and "+ one_chunk_one_span=on" in r.stdout
    assert "+ numbers_must_match=off" in r.stdout  # the guard, on by default, off in TAT-RAG
    r = rageval(*args, "--threshold", "0.5", "--json")
    got = json.loads(r.stdout)
    assert "threshold" not in [st["setting"] for st in got["steps"]]
    rows = T.per_query(TAT_GOLDEN, TAT_OUTPUT, 0.5)
    assert all(same(got["preset_values"][n], v) for n, v in T.summary(rows).items())


def test_a_rule_without_a_preset_is_refused(tmp_path: Path) -> None:
    out, gold = write(tmp_path / "o.json", TAT_OUTPUT), write(tmp_path / "g.json", TAT_GOLDEN)
    r = rageval("evaluate", str(out), str(gold), "--format", "tatrag", "--one-chunk-one-span")
    assert r.returncode != 0 and "--one-chunk-one-span" in r.stderr
    r = rageval(
        "evaluate", str(out), str(gold), "--format", "tatrag", "--preset", "tat-rag",
        "--no-gold-scores-zero", "--precision-divisor", "k", "--json",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["settings"].get("precision_divisor") is None  # k: the default


# --- compare and gate -------------------------------------------------------------------------


def test_compare_and_gate_with_a_preset(tmp_path: Path) -> None:
    reversed_output = [hits[::-1] for hits in TAT_OUTPUT]
    gold = write(tmp_path / "g.json", TAT_GOLDEN)
    a, b = write(tmp_path / "a.json", TAT_OUTPUT), write(tmp_path / "b.json", reversed_output)
    with rv.load([a, gold], format="tatrag") as ra, rv.load([b, gold], format="tatrag") as rb:
        comparison = rv.compare([ra, rb], preset="tat-rag", threshold=0.5)
        for run, output in ((ra, TAT_OUTPUT), (rb, reversed_output)):
            want = T.summary(T.per_query(TAT_GOLDEN, output, 0.5))
            got = comparison.means[run.data.run.name]
            assert list(got) == list(T.NAMES)
            assert all(same(got[n], v) for n, v in want.items())
        verdict = rv.gate(comparison, max_drop={"MRR": 0.0, "HitRate@10": 1.0})
    mrr = [T.summary(T.per_query(TAT_GOLDEN, o, 0.5))["MRR"] for o in (TAT_OUTPUT, reversed_output)]
    assert [r.passed for r in verdict.results] == [mrr[1] >= mrr[0], True]


def test_eggai_best_match_position_is_lower_better() -> None:
    from rageval_core.compare import higher_is_better

    assert not higher_is_better("best_match_position")
    assert higher_is_better("mrr_score") and higher_is_better("nDCG@10")


@pytest.mark.parity
def test_breakdown_by_tag_aggregates_like_the_reporter(eggai: Any) -> None:
    run, pairs, results, _ = eggai
    report = rv.evaluate(run, preset="eggai", by="source_document")
    rows = E.per_query(pairs, results)
    for group, got in report.by["groups"].items():
        mine = [r for r, p in zip(rows, pairs, strict=True) if p["source_document"] == group]
        assert got["n"] == len(mine)
        assert all(same(got["metrics"][n], v) for n, v in E.summary(mine).items()), group
