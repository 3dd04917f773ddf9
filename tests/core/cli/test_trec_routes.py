"""Every route a TREC run and its qrels can take gives the same numbers, for every setting.

`rageval evaluate RUN --qrels QRELS` reads the files by the first route that vouches for them:
the numpy reader (formats/trec_columns.py), DuckDB's CSV reader (formats/trec.py), or the line
reader through a scratch store; `rageval import` then `rageval evaluate NAME` reads them from the
store. Which one is taken depends on the layout (one space, a tab, a doubled space, CRLF line
ends), so each layout is run through each route with the settings that read what the qrels say
of unjudged documents (--judged-only, Bpref, Judged@k) and the selection settings (--complete,
--rel-level). pytrec_eval (trec_eval's C code) is the independent reference.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from rageval_core import api
from rageval_core.evaluation.direct import trec_report
from rageval_core.formats import trec_columns
from rageval_core.evaluation.report import Settings
from tests.cli import rageval, rageval_subprocess
from tests.core.formats.test_columnar_import import trec_slow

#: a run with ties, unjudged documents, a pooled one (label -1), a query without qrels; and
#: qrels with graded labels and a judged query the run never retrieved ("q4")
RUN = [
    "q1 Q0 a 1 9.5 tagT",
    "q1 Q0 b 2 8 tagT",
    "q1 Q0 c 3 8 tagT",
    "q1 Q0 d 4 7.25 tagT",
    "q1 Q0 e 5 6 tagT",
    "q1 Q0 f 6 5 tagT",
    "q2 Q0 x 1 3 tagT",
    "q2 Q0 y 2 2 tagT",
    "q2 Q0 z 3 1 tagT",
    "q2 Q0 w 4 0.5 tagT",
    "q3 Q0 a 1 1 tagT",
    "q3 Q0 b 2 1 tagT",
]
QRELS = [
    "q1 0 b 2",
    "q1 0 d 0",
    "q1 0 f 1",
    "q1 0 g 3",
    "q1 0 e -1",
    "q2 0 y 1",
    "q2 0 w 0",
    "q2 0 v 2",
    "q4 0 a 1",
    "q4 0 b 0",
]
LAYOUTS = {
    "single_space": (" ", "\n"),
    "tab": ("\t", "\n"),
    "double_space": ("  ", "\n"),
    "crlf": (" ", "\r\n"),
    "gzip": (" ", "\n"),  # gzip-compressed (run.gz, qrels.gz as TREC and ranx give them)
}
METRICS = ["AP", "P@2", "nDCG@5", "RR", "R@5", "Bpref", "Judged@3", "Judged@10", "NumRet"]
SETTINGS = {
    "plain": Settings(),
    "judged_only": Settings(judged_only=True),
    "complete": Settings(complete=True),
    "rel_level_2": Settings(rel_level=2),
    "all": Settings(judged_only=True, complete=True, rel_level=2),
}


def write_pair(tmp: Path, layout: str) -> tuple[Path, Path]:
    sep, end = LAYOUTS[layout]
    run, qrels = tmp / f"{layout}.run", tmp / f"{layout}.qrels"
    for path, lines in ((run, RUN), (qrels, QRELS)):
        data = "".join(sep.join(line.split()) + end for line in lines).encode()
        path.write_bytes(gzip.compress(data) if layout == "gzip" else data)
    return run, qrels


def as_json(report: Any) -> dict[str, Any]:
    return json.loads(json.dumps(report.to_json(per_query=True), allow_nan=True))


def direct(run: Path, qrels: Path, s: Settings) -> dict[str, Any] | None:
    report = trec_report([run, qrels], None, METRICS, s, None)
    return None if report is None else as_json(report)


def scratch_store(run: Path, qrels: Path, s: Settings) -> dict[str, Any]:
    with api.load([run, qrels]) as loaded:
        return as_json(api.evaluate(loaded, METRICS, settings=s))


def routes(
    run: Path, qrels: Path, s: Settings, monkeypatch: pytest.MonkeyPatch
) -> dict[str, dict[str, Any] | None]:
    """The report of each route that takes the files (None: the route steps aside)."""
    out: dict[str, dict[str, Any] | None] = {
        "numpy": direct(run, qrels, s) if trec_columns.read_pair(run, qrels) else None
    }
    with monkeypatch.context() as m:
        m.setattr(trec_columns, "read_pair", lambda run, qrels: None)
        out["duckdb"] = direct(run, qrels, s)
        out["store_bulk"] = scratch_store(run, qrels, s)
        trec_slow(m)
        out["line_reader"] = direct(run, qrels, s)  # steps aside: no bulk route left
        out["store_lines"] = scratch_store(run, qrels, s)
    return out


@pytest.mark.parametrize("setting", sorted(SETTINGS))
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_every_route_gives_the_same_report(
    layout: str, setting: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run, qrels = write_pair(tmp_path, layout)
    s = SETTINGS[setting]
    got = routes(run, qrels, s, monkeypatch)
    # which routes take which layout (a doubled space only the line reader; CRLF also DuckDB)
    assert (got["numpy"] is not None) is (layout in ("single_space", "tab", "gzip"))
    assert (got["duckdb"] is not None) is (layout != "double_space")
    assert got["line_reader"] is None
    reference = got["store_lines"]
    assert reference is not None
    for route, report in got.items():
        if report is not None:
            assert report == reference, route


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_the_cli_honours_judged_only_on_every_layout(layout: str, tmp_path: Path) -> None:
    """`rageval evaluate RUN --qrels QRELS --judged-only` against import-then-evaluate, and
    against pytrec_eval's judged_docs_only_flag (trec_eval -J)."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    run, qrels = write_pair(tmp_path, layout)
    args = ["--metrics", "AP,P@2,Bpref,Judged@3", "--judged-only", "--json"]
    direct_cli = rageval("evaluate", str(run), "--qrels", str(qrels), *args)
    assert direct_cli.returncode == 0, direct_cli.stderr
    db = tmp_path / "s.duckdb"
    imported = rageval("import", str(run), str(qrels), "--name", "r", db=db)
    assert imported.returncode == 0, imported.stderr
    stored = rageval("evaluate", "r", *args, db=db)
    assert stored.returncode == 0, stored.stderr
    got = json.loads(direct_cli.stdout)["metrics"]
    assert got == json.loads(stored.stdout)["metrics"]
    # trec_eval -J: unjudged documents (and the pooled -1) leave the ranking before measuring
    qrels_dict: dict[str, dict[str, int]] = {}
    for line in QRELS:
        q, _, d, rel = line.split()
        qrels_dict.setdefault(q, {})[d] = int(rel)
    run_dict: dict[str, dict[str, float]] = {}
    for line in RUN:
        q, _, d, _, score, _ = line.split()
        run_dict.setdefault(q, {})[d] = float(score)
    evaluator = pytrec_eval.RelevanceEvaluator(
        qrels_dict, {"map", "P_2", "bpref"}, judged_docs_only_flag=True
    )
    per_query = evaluator.evaluate(run_dict)
    for ours, theirs in (("AP", "map"), ("P@2", "P_2"), ("Bpref", "bpref")):
        expected = sum(v[theirs] for v in per_query.values()) / len(per_query)
        assert got[ours] == pytest.approx(expected, abs=1e-12), ours
    # the honest negative: without -J the numbers differ (q1 and q2 have unjudged documents)
    plain = rageval("evaluate", str(run), "--qrels", str(qrels), *args[:2], "--json")
    assert json.loads(plain.stdout)["metrics"]["AP"] != pytest.approx(got["AP"])


def test_judged_only_in_a_real_process(tmp_path: Path) -> None:
    """The entry point and exit code: Bpref and Judged@k on a single-space pair exit 0."""
    run, qrels = write_pair(tmp_path, "single_space")
    done = rageval_subprocess(
        "evaluate", str(run), "--qrels", str(qrels), "--metrics", "Bpref,Judged@10", "--json"
    )
    assert done.returncode == 0, done.stderr
    assert set(json.loads(done.stdout)["metrics"]) == {"Bpref", "Judged@10"}


@pytest.mark.parametrize("layout", ["single_space", "crlf", "double_space"])
@pytest.mark.parametrize("complete", [False, True])
def test_judged_at_k_scores_a_judged_query_absent_from_the_run(
    layout: str, complete: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ir_measures scores Judged@k on every qrels query, 0 for "q4" which the run lacks, with
    or without -c; the trec_eval measures keep trec_eval's selection (q4 only with -c)."""
    ir_measures = pytest.importorskip("ir_measures")
    run, qrels = write_pair(tmp_path, layout)
    expected = ir_measures.calc_aggregate(
        [ir_measures.parse_measure("Judged@3"), ir_measures.parse_measure("Judged@10")],
        list(ir_measures.read_trec_qrels(str(qrels))),
        list(ir_measures.read_trec_run(str(run))),
    )
    s = Settings(complete=complete)
    for route, report in routes(run, qrels, s, monkeypatch).items():
        if report is None:
            continue
        for name in ("Judged@3", "Judged@10"):
            assert report["metrics"][name] == pytest.approx(
                expected[ir_measures.parse_measure(name)], abs=1e-12
            ), (route, name)
            assert report["per_query"]["q4"][name] == 0.0
        # AP follows trec_eval: q4 is scored (0) only with -c
        assert (report["per_query"]["q4"]["AP"] is not None) is complete, route


def test_a_gz_pair_equals_the_plain_pair_whatever_its_name(tmp_path: Path) -> None:
    """run.gz and qrels.gz (or a compressed file without the suffix) give the plain files'
    report through the CLI and through import; a plain file is not mistaken for one."""
    plain_run, plain_qrels = write_pair(tmp_path, "single_space")
    gz_run, gz_qrels = write_pair(tmp_path, "gzip")
    named = [tmp_path / "run.gz", tmp_path / "qrels.gz"]
    named[0].write_bytes(gz_run.read_bytes())
    named[1].write_bytes(gz_qrels.read_bytes())
    args = ["--metrics", ",".join(METRICS), "--json", "--per-query"]

    def report(run: Path, qrels: Path) -> dict[str, Any]:
        done = rageval("evaluate", str(run), "--qrels", str(qrels), *args)
        assert done.returncode == 0, done.stderr
        return dict(json.loads(done.stdout))

    expected = report(plain_run, plain_qrels)
    assert report(gz_run, gz_qrels) == expected
    assert report(*named) == expected
    db = tmp_path / "s.duckdb"
    imported = rageval("import", *map(str, named), "--name", "tagT", db=db)
    assert imported.returncode == 0, imported.stderr
    stored = rageval("evaluate", "tagT", *args, db=db)
    assert json.loads(stored.stdout)["metrics"] == expected["metrics"]


def test_a_broken_gz_file_is_named_at_its_line(tmp_path: Path) -> None:
    """A .gz file cut short past its first 64 KB: file:line: file: problem, exit 2, no
    traceback; one cut inside its head fails at line 0."""
    lines = [f"q{q} Q0 d{d} {d + 1} {1000 - d}.5 tagT\n" for q in range(400) for d in range(100)]
    whole = gzip.compress("".join(lines).encode())
    qrels = tmp_path / "x.qrels"
    qrels.write_text("q1 0 d3 1\n", encoding="utf-8")
    cut = tmp_path / "cut.run.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    done = rageval_subprocess("evaluate", str(cut), "--qrels", str(qrels))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    problem = next(line for line in done.stderr.splitlines() if line.startswith(str(cut)))
    where, field, message = problem.split(": ", 2)
    assert int(where.rsplit(":", 1)[1]) > 1000 and field == "file"
    assert message == "compressed data ends early (a truncated .gz file)"
    cut.write_bytes(whole[:40])
    done = rageval("evaluate", str(cut), "--qrels", str(qrels))
    assert done.returncode == 2
    assert f"{cut}:0: file: compressed data ends early" in done.stderr


def test_a_gz_file_of_another_format_is_refused_by_name(tmp_path: Path) -> None:
    """Only the TREC readers decompress: a gzipped JSONL run is an input error saying so."""
    path = tmp_path / "run.jsonl.gz"
    row = {"query_id": "q", "retrieved": [{"doc_id": "a"}], "relevant_ids": ["a"]}
    path.write_bytes(gzip.compress((json.dumps(row) + "\n").encode()))
    done = rageval("evaluate", str(path))
    assert done.returncode == 2
    assert (
        f"{path}:0: file: a gzip-compressed native file: only TREC runs and qrels are read "
        "compressed" in done.stderr
    )
