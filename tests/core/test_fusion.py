"""`rageval fuse` against ranx's fuse: the same fused scores (1e-9) and rankings, then the fused
run imported, evaluated and compared like any other."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

import pytest
from ranx import Run, fuse

from rageval_core.errors import ProblemLog, UsageError
from rageval_core.formats import trec
from rageval_core.compare.fusion import fuse_queries, fuse_rankings, min_max
from rageval_core.model import Chunk, Query
from tests.cli import rageval

#: ours -> ranx's method name
RANX = {"rrf": "rrf", "combsum": "sum", "combmnz": "mnz"}


def random_runs(seed: int, n_runs: int) -> list[dict[str, dict[str, float]]]:
    """Runs over the same queries, overlapping documents, distinct scores within each list
    (ranx orders a list by score: ties would leave its order to its sort)."""
    rng = random.Random(seed)
    qids = [f"q{i}" for i in range(12)]
    runs = []
    for _ in range(n_runs):
        run = {}
        for q in qids:
            docs = rng.sample([f"d{j}" for j in range(25)], rng.randint(1, 15))
            scores = rng.sample(range(-500, 500), len(docs))
            run[q] = {
                d: s / rng.choice([7.0, 10.0, 3.0]) for d, s in zip(docs, scores, strict=True)
            }
        runs.append(run)
    return runs


def as_queries(run: dict[str, dict[str, float]]) -> list[Query]:
    return [
        Query(q, tuple(Chunk(d, score=s) for d, s in sorted(docs.items(), key=lambda x: -x[1])))
        for q, docs in run.items()
    ]


@pytest.mark.parametrize(
    ("method", "params"),
    [("rrf", {"k": 60}), ("rrf", {"k": 5}), ("combsum", {}), ("combmnz", {})],
)
@pytest.mark.parametrize("seed", [1, 2])
def test_equals_ranx(method: str, params: dict[str, int], seed: int) -> None:
    runs = random_runs(seed, 2 + seed)  # two and three runs
    theirs = fuse(
        [Run(r, name=f"r{i}") for i, r in enumerate(runs)],
        norm="min-max",
        method=RANX[method],
        params=params,
    ).to_dict()
    fused = fuse_queries(
        [(f"r{i}", as_queries(r)) for i, r in enumerate(runs)], method, params.get("k", 60)
    )
    assert [q.query_id for q in fused.queries] == list(runs[0])
    for q in fused.queries:
        ours = {c.doc_id: c.score for c in q.retrieved or ()}
        expected = theirs[q.query_id]
        assert set(ours) == set(expected)
        for doc, score in expected.items():
            assert ours[doc] == pytest.approx(score, abs=1e-9, rel=0), (q.query_id, doc)
        # the ranking: by fused score, descending; equal scores (several documents with the
        # same RRF ranks) may come in any order in ranx, so only the order of scores is held
        ranked = [expected[c.doc_id] for c in q.retrieved or ()]
        assert all(a >= b - 1e-12 for a, b in itertools.pairwise(ranked))


def test_by_hand() -> None:
    a = [("x", 3.0), ("y", 2.0), ("z", 1.0)]
    b = [("y", 10.0), ("w", 0.0)]
    rrf = dict(fuse_rankings([a, b], "rrf", 60))
    assert rrf == pytest.approx({"x": 1 / 61, "y": 1 / 62 + 1 / 61, "z": 1 / 63, "w": 1 / 62})
    combsum = fuse_rankings([a, b], "combsum")
    assert dict(combsum) == pytest.approx({"x": 1.0, "y": 0.5 + 1.0, "z": 0.0, "w": 0.0})
    assert [d for d, _ in combsum] == ["y", "x", "z", "w"]  # ties by doc id descending
    combmnz = dict(fuse_rankings([a, b], "combmnz"))
    assert combmnz == pytest.approx({"x": 1.0, "y": 3.0, "z": 0.0, "w": 0.0})
    assert min_max([5.0, 5.0]) == [0.0, 0.0]  # ranx's floor: no division by 0
    repeated = dict(fuse_rankings([[("x", 1.0), ("x", 0.5), ("y", 0.0)], b], "rrf", 0))
    assert repeated["y"] == pytest.approx(1 / 2 + 1 / 1)  # x's second copy takes no rank


def test_what_a_fused_query_keeps() -> None:
    a = [
        Query("q1", (Chunk("x", text=None, score=1.0),), relevance={}, tags={"t": "1"}),
        Query("q2", None, relevance={"y": 1}),  # judged, absent from run a
    ]
    b = [
        Query("q1", (Chunk("x", text="from b", score=2.0),), query="text", relevance={"x": 1}),
        Query("q3", (Chunk("z", score=1.0),)),
    ]
    fused = {q.query_id: q for q in fuse_queries([("a", a), ("b", b)], "rrf").queries}
    assert list(fused) == ["q1", "q2", "q3"]
    # {} (judged, nothing relevant) is kept over a later run's qrels: it is not "no qrels"
    assert fused["q1"].relevance == {} and fused["q1"].query == "text"
    assert fused["q1"].tags == {"t": "1"}
    assert fused["q1"].retrieved is not None and fused["q1"].retrieved[0].text == "from b"
    assert fused["q2"].retrieved is None and fused["q2"].relevance == {"y": 1}
    assert fused["q3"].relevance is None


def test_refusals() -> None:
    with pytest.raises(UsageError, match="method"):
        fuse_rankings([], "borda")
    with pytest.raises(UsageError, match="score"):
        fuse_rankings([[("x", None)], [("x", 1.0)]], "combsum")
    assert fuse_rankings([[("x", None)], [("x", 1.0)]], "rrf")  # ranks only
    with pytest.raises(UsageError, match="two runs"):
        fuse_queries([("a", [])], "rrf")


def write_native(path: Path, name: str, run: dict[str, dict[str, float]], qrels: dict) -> Path:
    lines = [json.dumps({"rageval_run": {"name": name}})]
    for q, docs in run.items():
        ranked = sorted(docs.items(), key=lambda x: -x[1])
        lines.append(
            json.dumps(
                {
                    "query_id": q,
                    "query": f"text of {q}",
                    "retrieved": [
                        {"doc_id": d, "text": f"chunk {d}", "score": s} for d, s in ranked
                    ],
                    "relevance": qrels[q],
                }
            )
        )
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_cli_fused_run_is_stored_written_and_evaluated(tmp_path: Path) -> None:
    import pytrec_eval

    runs = random_runs(7, 2)
    rng = random.Random(3)
    qrels = {q: {f"d{j}": rng.randint(0, 2) for j in rng.sample(range(25), 8)} for q in runs[0]}
    db = tmp_path / "s.duckdb"
    for i, run in enumerate(runs):
        path = write_native(tmp_path / f"r{i}.jsonl", f"r{i}", run, qrels)
        assert rageval("import", str(path), db=db).returncode == 0
    stored = rageval("fuse", "r0", "r1", "--method", "rrf", db=db)
    assert stored.returncode == 0, stored.stderr
    assert "imported: rrf-r0-r1" in stored.stdout

    ranx_run = fuse([Run(r) for r in runs], method="rrf").to_dict()
    expected = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "map"}).evaluate(ranx_run)
    mean = {m: sum(v[m] for v in expected.values()) / len(expected) for m in ("ndcg_cut_10", "map")}

    got = json.loads(
        rageval("evaluate", "rrf-r0-r1", "--metrics", "nDCG@10 AP", "--json", db=db).stdout
    )
    assert got["metrics"]["nDCG@10"] == pytest.approx(mean["ndcg_cut_10"], abs=1e-9)
    assert got["metrics"]["AP"] == pytest.approx(mean["map"], abs=1e-9)
    compared = rageval("compare", "r0", "rrf-r0-r1", "--metrics", "AP", "--json", db=db)
    assert compared.returncode == 0, compared.stderr
    assert json.loads(compared.stdout)["candidates"] == ["rrf-r0-r1"]

    # written to a file (native JSONL keeps texts and qrels), then imported like any run file
    out = tmp_path / "fused.jsonl"
    written = rageval("fuse", "r0", str(tmp_path / "r1.jsonl"), "--out", str(out), db=db)
    assert written.returncode == 0, written.stderr
    again = json.loads(rageval("evaluate", str(out), "--metrics", "nDCG@10 AP", "--json").stdout)
    assert again["metrics"] == pytest.approx(got["metrics"], abs=1e-12)
    first = json.loads(out.read_text(encoding="utf-8").splitlines()[1])
    assert first["query"] == "text of q0" and first["retrieved"][0]["text"].startswith("chunk ")

    # TREC run lines, read with the original qrels
    trec = tmp_path / "fused.trec"
    qrels_path = tmp_path / "qrels.txt"
    qrels_path.write_text(
        "".join(f"{q} 0 {d} {r}\n" for q, docs in qrels.items() for d, r in docs.items())
    )
    assert (
        rageval("fuse", "r0", "r1", "--method", "combmnz", "--out", str(trec), db=db).returncode
        == 0
    )
    mnz = fuse([Run(r) for r in runs], method="mnz").to_dict()
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"map"}).evaluate(mnz)
    from_trec = json.loads(
        rageval("evaluate", str(trec), str(qrels_path), "--metrics", "AP", "--json").stdout
    )
    assert from_trec["metrics"]["AP"] == pytest.approx(
        sum(v["map"] for v in ref.values()) / len(ref), abs=1e-9
    )


def test_cli_errors_exit_2(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    path = write_native(tmp_path / "a.jsonl", "a", {"q": {"d": 1.0}}, {"q": {"d": 1}})
    assert rageval("import", str(path), db=db).returncode == 0
    one = rageval("fuse", "a", db=db)
    assert one.returncode == 2 and "two runs" in one.stderr and "Traceback" not in one.stderr
    missing = rageval("fuse", "a", "nope", db=db)
    assert missing.returncode == 2 and "nope" in missing.stderr


def test_rrf_with_tied_scores_differs_from_ranx_only_inside_tie_groups(tmp_path: Path) -> None:
    """Tied retriever scores: RRF needs each document's rank, and rageval ranks a tie group by
    doc id descending (trec_eval's order, as every other measure reads the list), where ranx
    ranks it in the order its unstable sort leaves. Every fused score outside a tie group, and
    each query's total, equal ranx's; inside a tie group they may differ, as the docs say."""
    rng = random.Random(4)
    runs = []
    for _ in range(2):
        runs.append(
            {
                f"q{q}": {d: float(rng.choice([1, 2, 3, 4])) for d in rng.sample(range(30), 12)}
                for q in range(10)
            }
        )
    runs = [{q: {f"d{d}": s for d, s in docs.items()} for q, docs in r.items()} for r in runs]
    theirs = fuse([Run(r) for r in runs], norm="min-max", method="rrf").to_dict()
    differing = 0
    for q in runs[0]:
        lists = [sorted(r[q].items(), key=lambda x: (x[1], x[0]), reverse=True) for r in runs]
        ours = dict(fuse_rankings(lists, "rrf", 60))
        assert sum(ours.values()) == pytest.approx(sum(theirs[q].values()), abs=1e-12)
        tied = {d for r in runs for d, s in r[q].items() if list(r[q].values()).count(s) > 1}
        for doc, score in theirs[q].items():
            if ours[doc] != pytest.approx(score, abs=1e-12, rel=0):
                assert doc in tied, (q, doc)
                differing += 1
    assert differing > 0  # the stated difference is real on such runs
    # the rule, by hand: ranks are list positions, and the TREC reader lists x and y (tied at
    # 1.0) as trec_eval does, y (the larger id) first, so y takes rank 1
    path = tmp_path / "tied.run"
    path.write_text("q Q0 x 1 1.0 t\nq Q0 y 2 1.0 t\n", encoding="utf-8")
    (query,) = trec.read(path, None, ProblemLog()).queries
    listed = [(c.doc_id, c.score) for c in query.retrieved or ()]
    assert [d for d, _ in listed] == ["y", "x"]
    assert fuse_rankings([listed, [("z", 0.0)]], "rrf", 60) == [
        ("z", 1 / 61),
        ("y", 1 / 61),
        ("x", 1 / 62),
    ]


def test_the_docs_state_where_rrf_differs_from_ranx() -> None:
    """Wherever fusion is said to equal ranx's fuse, the tie exception is stated."""
    from tests.paths import REPO

    outputs = (REPO / "docs" / "outputs.md").read_text(encoding="utf-8")
    section = outputs.split("## `rageval fuse", 1)[1].split("\n## ", 1)[0]
    assert "tied retriever scores" in section
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    line = next(x for x in readme.splitlines() if "equal to ranx's `fuse`" in x)
    assert "except" in line
