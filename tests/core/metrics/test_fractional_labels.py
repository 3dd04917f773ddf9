"""Graded relevance as fractions: a native file's `{"d1": 0.3, "d2": 1.0}` and decimal labels in
TREC qrels are read, stored and scored with the gain as given (nDCG) and "relevant" = label >=
the relevance level; integer labels keep trec_eval's numbers and the content hash they had.

The independent reference is pytrec_eval (trec_eval's C code), which takes integer labels only:
nDCG does not change when every gain is multiplied by 10, and "label >= 1" on the fractions is
"label >= 10" on the labels times 10, so the fractional run is held to pytrec_eval's numbers on
its labels times 10 (every fraction here has one decimal), and to a hand-computed case.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from rageval_core import api
from rageval_core.evaluation.direct import trec_report
from rageval_core.evaluation.report import Settings
from rageval_core.store import Store
from tests.cli import rageval

#: graded qrels with fractions, a negative label, a judged document never retrieved
QRELS = {
    "q1": {"d1": 0.3, "d2": 1.0, "d3": 0.0, "d9": 2.5},
    "q2": {"d4": 1.5, "d5": 0.7, "d6": -1.0},
    "q3": {"d7": 0.5},
}
RUN = {
    "q1": ["d1", "d2", "d3", "d8"],
    "q2": ["d5", "d6", "d4"],
    "q3": ["d8", "d7"],
}
METRICS = ["nDCG", "nDCG@3", "AP", "P@2", "R@3", "RR", "Rprec", "Bpref", "NumRel"]
PYTREC = {
    "nDCG": "ndcg",
    "nDCG@3": "ndcg_cut_3",
    "AP": "map",
    "P@2": "P_2",
    "R@3": "recall_3",
    "RR": "recip_rank",
    "Rprec": "Rprec",
    "Bpref": "bpref",
    "NumRel": "num_rel",
}


def write_native(path: Path) -> Path:
    rows = [
        {"query_id": q, "retrieved": [{"doc_id": d} for d in docs], "relevance": QRELS[q]}
        for q, docs in RUN.items()
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def write_trec(tmp: Path) -> tuple[Path, Path]:
    run, qrels = tmp / "f.run", tmp / "f.qrels"
    run.write_text(
        "".join(
            f"{q} Q0 {d} {r} {100 - r} tagF\n"
            for q, docs in RUN.items()
            for r, d in enumerate(docs, start=1)
        ),
        encoding="utf-8",
    )
    qrels.write_text(
        "".join(
            f"{q} 0 {d} {label:g}\n" for q, labels in QRELS.items() for d, label in labels.items()
        ),
        encoding="utf-8",
    )
    return run, qrels


def pytrec_values(rel_level: int) -> dict[str, float]:
    """pytrec_eval's run values on the labels times 10, at the relevance level times 10."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    scaled = {q: {d: round(10 * v) for d, v in labels.items()} for q, labels in QRELS.items()}
    run = {q: {d: float(100 - r) for r, d in enumerate(docs, 1)} for q, docs in RUN.items()}
    evaluator = pytrec_eval.RelevanceEvaluator(
        scaled, set(PYTREC.values()), relevance_level=10 * rel_level
    )
    per_query = evaluator.evaluate(run)
    out = {}
    for ours, theirs in PYTREC.items():
        values = [per_query[q][theirs] for q in RUN]
        # NumRel counts the relevant documents: summed, not averaged
        out[ours] = sum(values) if ours == "NumRel" else sum(values) / len(values)
    return out


@pytest.mark.parametrize("rel_level", [1, 2])
def test_a_native_file_with_fractional_grades_matches_pytrec_eval(
    rel_level: int, tmp_path: Path
) -> None:
    path = write_native(tmp_path / "f.jsonl")
    done = rageval(
        "evaluate",
        str(path),
        "--metrics",
        ",".join(METRICS),
        "--rel-level",
        str(rel_level),
        "--json",
    )
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)["metrics"]
    expected = pytrec_values(rel_level)
    for name in METRICS:
        assert got[name] == pytest.approx(expected[name], abs=1e-12), name


def test_decimal_trec_qrels_give_the_native_files_numbers_on_every_route(
    tmp_path: Path,
) -> None:
    """The fast routes step aside for decimal labels (they read integers); the line reader and
    the store read them, through the CLI and import-then-evaluate alike."""
    run, qrels = write_trec(tmp_path)
    assert trec_report([run, qrels], None, METRICS, Settings(), None) is None
    args = ["--metrics", ",".join(METRICS), "--json"]
    direct = rageval("evaluate", str(run), "--qrels", str(qrels), *args)
    assert direct.returncode == 0, direct.stderr
    db = tmp_path / "s.duckdb"
    assert rageval("import", str(run), str(qrels), db=db).returncode == 0
    stored = rageval("evaluate", "tagF", *args, db=db)
    got = json.loads(direct.stdout)["metrics"]
    assert got == json.loads(stored.stdout)["metrics"]
    expected = pytrec_values(1)
    for name in METRICS:
        assert got[name] == pytest.approx(expected[name], abs=1e-12), name


def test_ndcg_by_hand(tmp_path: Path) -> None:
    """q1 alone: gains 0.3, 1.0, 0, 0 at ranks 1-4; ideal 2.5, 1.0, 0.3 (d9 never retrieved)."""
    path = tmp_path / "one.jsonl"
    row = {
        "query_id": "q1",
        "retrieved": [{"doc_id": d} for d in RUN["q1"]],
        "relevance": QRELS["q1"],
    }
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    with api.load([path]) as loaded:
        report = api.evaluate(loaded, ["nDCG@3", "P@2", "NumRel"])
    dcg = 0.3 / math.log2(2) + 1.0 / math.log2(3)
    idcg = 2.5 / math.log2(2) + 1.0 / math.log2(3) + 0.3 / math.log2(4)
    assert report.metrics["nDCG@3"] == pytest.approx(dcg / idcg, abs=1e-15)
    assert report.metrics["P@2"] == 0.5  # 0.3 is below the level (1); 1.0 is relevant
    assert report.metrics["NumRel"] == 2  # d2 (1.0) and d9 (2.5)


def test_labels_read_back_as_given(tmp_path: Path) -> None:
    """A stored run gives its labels back as they came: ints as ints, fractions as floats."""
    path = write_native(tmp_path / "f.jsonl")
    with api.load([path]) as loaded:
        queries = {q.query_id: q for q in loaded.store.iter_queries(loaded.data.run.run_id)}
    assert dict(queries["q1"].relevance or {}) == QRELS["q1"]
    integer = tmp_path / "i.jsonl"
    integer.write_text(
        json.dumps({"query_id": "q", "retrieved": [], "relevance": {"a": 2, "b": -1}}) + "\n",
        encoding="utf-8",
    )
    with api.load([integer]) as loaded:
        (query,) = list(loaded.store.iter_queries(loaded.data.run.run_id))
    assert query.relevance == {"a": 2, "b": -1}
    assert all(type(v) is int for v in query.relevance.values())


def test_integer_labels_keep_their_content_hash(tmp_path: Path) -> None:
    """The qrels column holds doubles now; a run of integer labels hashes as it did before
    (the digest is the one rageval gave when the column held integers), so importing it again
    into an older store still finds it ("already stored")."""
    run = tmp_path / "h.run"
    run.write_text("q1 Q0 a 1 3 t\nq1 Q0 b 2 2 t\nq2 Q0 c 1 1 t\n", encoding="utf-8")
    qrels = tmp_path / "h.qrels"
    qrels.write_text("q1 0 a 2\nq1 0 z -1\nq2 0 c 0\nq3 0 x 1\n", encoding="utf-8")
    from rageval_core.importing import import_paths

    with Store(":memory:") as store:
        (record,) = import_paths(store, [run, qrels]).imported
        assert record.content_hash == (
            "5463a8a4aab8dbca59b1ea6b9b12e237bc1a87494ccb11233b1a08ac89a5f0db"
        )
        # a fractional grade is content too: another label, another digest
        qrels.write_text("q1 0 a 2.5\nq1 0 z -1\nq2 0 c 0\nq3 0 x 1\n", encoding="utf-8")
        (other,) = import_paths(store, [run, qrels]).imported
        assert other.content_hash != record.content_hash


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("q1 0 d1 1.1.11", "rel: expected a number, got '1.1.11'"),  # from trec_eval's tests
        ("q1 0 d1 0x37", "rel: expected a number, got '0x37'"),
        ("q1 0 d1 nan", "rel: expected a number, got 'nan'"),
        ("q1 0 d1 1e999", "rel: expected a finite number, got inf"),
        ("q1 0 d1 3e9", "rel: label out of range (-2147483648 to 2147483647), got 3000000000.0"),
        ("q1 0 d1 1e-320", "rel: label too close to 0"),
    ],
)
def test_bad_decimal_labels_are_named_at_their_line(
    line: str, problem: str, tmp_path: Path
) -> None:
    run, qrels = write_trec(tmp_path)
    qrels.write_text("q1 0 d2 1\n" + line + "\n", encoding="utf-8")
    done = rageval("evaluate", str(run), "--qrels", str(qrels))
    assert done.returncode == 2
    assert f"{qrels}:2: {problem}" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("label", ["true", '"0.5"', "1e999", "null"])
def test_a_native_label_that_is_no_number_is_refused(label: str, tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(
        '{"query_id": "q", "retrieved": [], "relevance": {"d": ' + label + "}}\n",
        encoding="utf-8",
    )
    done = rageval("evaluate", str(path))
    assert done.returncode == 2
    assert f"{path}:1: relevance.d: " in done.stderr
