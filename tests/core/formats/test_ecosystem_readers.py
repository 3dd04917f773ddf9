"""The ecosystem readers (beir, ranx, openinference, deepeval, llamaindex) on files in their tools'
shapes: ranx's files are written by ranx itself (Run.save / Qrels.save); BEIR's dataset folder
is written by hand in the layout GenericDataLoader reads (the beir package pulls in
sentence-transformers and torch: too heavy for a test dependency, and the layout is three plain
files); OpenInference exports are written in the three shapes the tools write (OpenTelemetry's
span JSON, Phoenix's spans dataframe rows, OTLP JSON); DeepEval and LlamaIndex in their
documented shapes. Ranking metrics are checked against pytrec_eval on the same dicts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import pytrec_eval

import rageval as rv
from rageval_core.errors import InputError, ProblemLog, UsageError
from rageval_core.formats import read_inputs
from rageval_core.formats.options import ReadOptions, reading_with
from rageval_core.importing import import_paths
from rageval_core.store import Store
from tests.cli import rageval, rageval_subprocess
from tests.paths import REPO

#: rageval's names -> pytrec_eval's
MEASURES = {
    "P@5": "P_5",
    "nDCG@10": "ndcg_cut_10",
    "AP": "map",
    "RR": "recip_rank",
    "R@10": "recall_10",
}

RUN = {
    "q1": {"d1": 0.9, "d2": 0.8, "d3": 0.3, "d7": 0.1},
    "q2": {"d2": 0.5, "d5": 0.7, "q2": 0.9, "d9": 0.2},
    "q3": {"d4": 1.5, "d1": 1.5, "d8": 0.4},
    "q5": {"d6": 0.3},
}
QRELS = {
    "q1": {"d1": 1, "d3": 2, "d6": 1},
    "q2": {"d5": 1, "q2": 1},
    "q3": {"d1": 1, "d8": 0},
    "q4": {"d1": 1},
}


def pytrec(run: dict[str, dict[str, float]], qrels: dict[str, dict[str, int]]) -> dict[str, float]:
    """pytrec_eval's means over the queries it scores (those in both run and qrels)."""
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, set(MEASURES.values()))
    per_query = evaluator.evaluate(run)
    return {
        ours: sum(m[theirs] for m in per_query.values()) / len(per_query)
        for ours, theirs in MEASURES.items()
    }


def ours(paths: list[Path], fmt: str | None = None, **options: Any) -> dict[str, float]:
    with reading_with(ReadOptions(**options)), rv.load(paths, format=fmt) as run:
        report = rv.evaluate(run, list(MEASURES))
    return dict(report.metrics)


def assert_same(got: dict[str, float], expected: dict[str, float]) -> None:
    assert got.keys() == expected.keys()
    for name, value in expected.items():
        assert got[name] == pytest.approx(value, abs=1e-12), name


def formats_of(paths: list[Path], fmt: str | None = None) -> list[tuple[str, tuple[str, ...]]]:
    log = ProblemLog()
    runs = read_inputs(paths, fmt, log)
    return [(r.format, r.sources) for r in runs]


def problems(paths: list[Path], fmt: str | None = None) -> list[str]:
    with Store(":memory:") as store:
        out = import_paths(store, paths, fmt=fmt)
        assert out.failed and not out.imported, out.problems
        assert store.runs() == []
    return [str(p) for p in out.problems if p.severity == "error"]


# --- ranx ------------------------------------------------------------------------------------------


@pytest.fixture
def ranx_files(tmp_path: Path) -> tuple[Path, Path]:
    from ranx import Qrels, Run

    run, qrels = tmp_path / "bm25.json", tmp_path / "qrels.json"
    Run(RUN, name="bm25").save(str(run))
    Qrels(QRELS).save(str(qrels))
    return run, qrels


def test_ranx_files_are_detected_and_equal_pytrec_eval(ranx_files: tuple[Path, Path]) -> None:
    run, qrels = ranx_files
    assert formats_of([qrels, run]) == [("ranx", (str(run), str(qrels)))]
    assert_same(ours([run, qrels]), pytrec(RUN, QRELS))


def test_ranx_equals_ranx_own_evaluate(ranx_files: tuple[Path, Path]) -> None:
    from ranx import Qrels, Run, evaluate

    run, qrels = ranx_files
    theirs = evaluate(
        Qrels.from_file(str(qrels)),
        Run.from_file(str(run)),
        ["precision@5", "mrr"],
        make_comparable=True,
    )
    got = ours([run, qrels])
    # ranx averages over every query of the qrels (a judged query absent from the run scores 0),
    # which is rageval's --complete; without it, over the queries in both
    n_both = len(set(RUN) & set(QRELS))
    scale = n_both / len(QRELS)
    assert got["P@5"] * scale == pytest.approx(theirs["precision@5"], abs=1e-12)
    assert got["RR"] * scale == pytest.approx(theirs["mrr"], abs=1e-12)


def test_ranx_trec_save_reads_as_trec(tmp_path: Path) -> None:
    from ranx import Qrels, Run

    run, qrels = tmp_path / "bm25.trec", tmp_path / "qrels.txt"
    Run(RUN, name="bm25").save(str(run))
    Qrels(QRELS).save(str(qrels))
    assert formats_of([run, qrels])[0][0] == "trec"
    assert_same(ours([run, qrels]), pytrec(RUN, QRELS))


def test_ranx_bad_values_are_placed(tmp_path: Path) -> None:
    run = tmp_path / "run.json"
    run.write_text('{\n  "q1": {"d1": 0.5, "d2": "high"},\n  "q2": [1, 2]\n}\n')
    got = problems([run], "ranx")
    assert got == [
        f"{run}:2: q1.d2: expected a finite number, got a string",
        f"{run}:3: q2: expected an object {{doc_id: number}}, got an array",
    ]


def test_ranx_qrels_labels_must_be_integers(tmp_path: Path) -> None:
    run, qrels = tmp_path / "run.json", tmp_path / "qrels.json"
    run.write_text(json.dumps({"q1": {"d1": 0.5}}))
    qrels.write_text('{\n  "q1": {"d1": 1, "d2": "2"}\n}\n')
    assert problems([run, qrels]) == [
        f"{qrels}:2: q1.d2: expected an integer label from -2147483648 to 2147483647, got a string"
    ]


# --- BEIR ------------------------------------------------------------------------------------------


def write_beir(folder: Path, splits: tuple[str, ...] = ("test",)) -> Path:
    """A BEIR dataset folder as GenericDataLoader reads it."""
    folder.mkdir()
    corpus = [
        {"_id": f"d{i}", "title": f"Title {i}", "text": f"text of d{i}", "metadata": {}}
        for i in range(1, 10)
    ] + [{"_id": "q2", "title": "", "text": "the query q2 is in the corpus too"}]
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in corpus))
    queries = [
        {"_id": q, "text": f"question {q}", "metadata": {}} for q in ("q1", "q2", "q3", "q4")
    ]
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (folder / "qrels").mkdir()
    for split in splits:
        rows = [f"{q}\t{d}\t{r}" for q, labels in QRELS.items() for d, r in labels.items()]
        (folder / "qrels" / f"{split}.tsv").write_text(
            "query-id\tcorpus-id\tscore\n" + "\n".join(rows) + "\n"
        )
    return folder


def write_trec_run(path: Path, run: dict[str, dict[str, float]]) -> Path:
    path.write_text(
        "".join(
            f"{q} Q0 {d} {i + 1} {s} bm25\n"
            for q, docs in run.items()
            for i, (d, s) in enumerate(docs.items())
        )
    )
    return path


def test_beir_folder_with_a_results_json_equals_pytrec_eval(tmp_path: Path) -> None:
    dataset = write_beir(tmp_path / "scifact")
    results = tmp_path / "results.json"
    results.write_text(json.dumps(RUN))  # EvaluateRetrieval.retrieve's dict, saved as JSON
    assert formats_of([dataset, results])[0][0] == "beir"
    assert_same(ours([results, dataset]), pytrec(RUN, QRELS))


def test_beir_folder_with_a_trec_run_equals_pytrec_eval(tmp_path: Path) -> None:
    dataset = write_beir(tmp_path / "scifact")
    run = write_trec_run(tmp_path / "run.trec", RUN)
    assert formats_of([run, dataset])[0][0] == "beir"
    assert_same(ours([run, dataset]), pytrec(RUN, QRELS))


def test_beir_texts_come_from_the_corpus_and_queries(tmp_path: Path) -> None:
    dataset = write_beir(tmp_path / "scifact")
    run = write_trec_run(tmp_path / "run.trec", RUN)
    log = ProblemLog()
    (parsed,) = read_inputs([run, dataset / "qrels" / "test.tsv"], None, log)
    queries = {q.query_id: q for q in parsed.queries}
    assert queries["q1"].query == "question q1"
    assert [(c.doc_id, c.text) for c in queries["q1"].retrieved or ()][:2] == [
        ("d1", "Title 1 text of d1"),
        ("d2", "Title 2 text of d2"),
    ]
    assert queries["q2"].retrieved[0].text == "the query q2 is in the corpus too"  # type: ignore[index]
    assert queries["q4"].retrieved is None  # judged, not retrieved: as trec_eval
    assert queries["q4"].relevance == {"d1": 1}
    assert [p.field for p in log.warnings] == ["qid"]


def test_beir_files_given_one_by_one(tmp_path: Path) -> None:
    dataset = write_beir(tmp_path / "scifact")
    results = tmp_path / "results.json"
    results.write_text(json.dumps(RUN))
    files = [
        results,
        dataset / "corpus.jsonl",
        dataset / "queries.jsonl",
        dataset / "qrels" / "test.tsv",
    ]
    (parsed,) = read_inputs(files, None, ProblemLog())
    assert parsed.format == "beir" and len(parsed.sources) == 4
    assert_same(ours(files), pytrec(RUN, QRELS))


def test_ignore_identical_ids_as_beir_does(tmp_path: Path) -> None:
    dataset = write_beir(tmp_path / "arguana")
    results = tmp_path / "results.json"
    results.write_text(json.dumps(RUN))
    # BEIR's EvaluateRetrieval.evaluate(ignore_identical_ids=True): pop doc_id == query_id
    cleaned = {q: {d: s for d, s in docs.items() if d != q} for q, docs in RUN.items()}
    assert cleaned != RUN
    assert_same(ours([results, dataset], ignore_identical_ids=True), pytrec(cleaned, QRELS))
    assert ours([results, dataset]) != ours([results, dataset], ignore_identical_ids=True)


def test_ignore_identical_ids_on_the_cli_for_any_format(tmp_path: Path) -> None:
    run = write_trec_run(tmp_path / "run.trec", RUN)
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"{q} 0 {d} {r}\n" for q, ls in QRELS.items() for d, r in ls.items()))
    cleaned = {q: {d: s for d, s in docs.items() if d != q} for q, docs in RUN.items()}
    done = rageval(
        "evaluate", str(run), str(qrels), "--metrics", "AP", "--json", "--ignore-identical-ids"
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["metrics"]["AP"] == pytest.approx(pytrec(cleaned, QRELS)["AP"])


def test_beir_folder_splits(tmp_path: Path) -> None:
    results = tmp_path / "results.json"
    results.write_text(json.dumps(RUN))
    with_test = write_beir(tmp_path / "a", ("dev", "test", "train"))
    (parsed,) = read_inputs([results, with_test], None, ProblemLog())
    assert any(s.endswith("test.tsv") for s in parsed.sources)
    without = write_beir(tmp_path / "b", ("dev", "train"))
    assert problems([results, without]) == [
        f"{without}:0: qrels: several splits (dev.tsv, train.tsv) and no test.tsv: give one as "
        f"{without}/qrels/NAME.tsv"
    ]


def test_beir_bad_qrels_and_corpus_lines_are_placed(tmp_path: Path) -> None:
    dataset = write_beir(tmp_path / "d")
    qrels = dataset / "qrels" / "test.tsv"
    qrels.write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\thigh\nq2\td5\n")
    with (dataset / "corpus.jsonl").open("a") as fh:
        fh.write('{"_id": "d1", "title": "again", "text": "x"}\n{"_id": 3.5}\n')
    results = tmp_path / "results.json"
    results.write_text(json.dumps(RUN))
    got = problems([results, dataset])
    assert f"{qrels}:3: score: expected an integer label, got 'high'" in got
    assert f"{qrels}:4: columns: expected 3 columns (query-id, corpus-id, score), got 2" in got
    corpus = dataset / "corpus.jsonl"
    assert f'{corpus}:11: _id: duplicate "d1" (first on line 1)' in got
    assert f"{corpus}:12: _id: expected a non-empty string or an integer, got 3.5" in got


# --- OpenInference ---------------------------------------------------------------------------------

#: two traces: a retriever then a reranker, and an LLM call
TRACES = [
    {
        "trace": "0af7651916cd43dd8448eb211c80319c",
        "query_id": "q1",
        "query": "what is the capital of France?",
        "retrieved": [
            ("d1", "Paris is the capital.", 0.9),
            ("d2", "Lyon is big.", 0.8),
            ("d3", "France.", 0.3),
        ],
        "reranked": [("d3", "France.", 0.99), ("d1", "Paris is the capital.", 0.5)],
        "tokens": (120, 14),
    },
    {
        "trace": "5b8aa5a2d2c872e8321cf37308d69df2",
        "query_id": "q3",
        "query": "who wrote Hamlet?",
        "retrieved": [("d4", "Shakespeare wrote it.", 1.5), ("d8", "Hamlet is a play.", 0.4)],
        "reranked": [("d8", "Hamlet is a play.", 0.7), ("d4", "Shakespeare wrote it.", 0.6)],
        "tokens": (80, 9),
    },
]
OI_QRELS = {"q1": {"d1": 1, "d3": 2}, "q3": {"d4": 1}}
T0 = 1714557600.0  # 2024-05-01T10:00:00Z
#: span start and end offsets (s): retriever 0.00-0.12, reranker 0.12-0.17, LLM 0.17-0.90
TIMES = {"RETRIEVER": (0.0, 0.12), "RERANKER": (0.12, 0.17), "LLM": (0.17, 0.9)}


def span_attributes(trace: dict[str, Any], kind: str) -> dict[str, Any]:
    """The span's attributes as OpenInference's flat names."""
    attrs: dict[str, Any] = {"openinference.span.kind": kind}
    if kind == "RETRIEVER":
        attrs["input.value"] = trace["query"]
        attrs["metadata"] = json.dumps({"query_id": trace["query_id"]})
        for i, (d, text, score) in enumerate(trace["retrieved"]):
            attrs[f"retrieval.documents.{i}.document.id"] = d
            attrs[f"retrieval.documents.{i}.document.content"] = text
            attrs[f"retrieval.documents.{i}.document.score"] = score
    elif kind == "RERANKER":
        attrs["reranker.query"] = trace["query"]
        for side, docs in (("input", trace["retrieved"]), ("output", trace["reranked"])):
            for i, (d, text, score) in enumerate(docs):
                attrs[f"reranker.{side}_documents.{i}.document.id"] = d
                attrs[f"reranker.{side}_documents.{i}.document.content"] = text
                attrs[f"reranker.{side}_documents.{i}.document.score"] = score
    else:
        attrs["llm.token_count.prompt"], attrs["llm.token_count.completion"] = trace["tokens"]
    return attrs


def iso(seconds: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(seconds, UTC).isoformat()


def otel_spans() -> list[dict[str, Any]]:
    """OpenTelemetry's ReadableSpan.to_json() shape (what a ConsoleSpanExporter prints)."""
    out = []
    for n, trace in enumerate(TRACES):
        for kind, (a, b) in TIMES.items():
            out.append(
                {
                    "name": kind.lower(),
                    "context": {"trace_id": "0x" + trace["trace"], "span_id": f"0x{n}{kind}"},
                    "kind": "SpanKind.INTERNAL",
                    "parent_id": None,
                    "start_time": iso(T0 + n + a).replace("+00:00", "Z"),
                    "end_time": iso(T0 + n + b).replace("+00:00", "Z"),
                    "status": {"status_code": "OK"},
                    "attributes": span_attributes(trace, kind),
                    "events": [],
                    "links": [],
                }
            )
    return out


def phoenix_rows() -> list[dict[str, Any]]:
    """px.Client().get_spans_dataframe() saved with to_json(orient="records"): attributes.*
    columns, documents as lists of objects, times in epoch milliseconds (pandas' default)."""
    out = []
    for n, trace in enumerate(TRACES):
        for kind, (a, b) in TIMES.items():
            row: dict[str, Any] = {
                "name": kind.lower(),
                "span_kind": kind,
                "parent_id": None,
                "start_time": (T0 + n + a) * 1000,
                "end_time": (T0 + n + b) * 1000,
                "status_code": "OK",
                "context.span_id": f"{n}{kind}",
                "context.trace_id": trace["trace"],
                "attributes.openinference.span.kind": kind,
            }
            flat = span_attributes(trace, kind)
            for key in ("input.value", "metadata", "reranker.query"):
                if key in flat:
                    row[f"attributes.{key}"] = flat[key]
            for key, docs in (
                ("retrieval.documents", trace["retrieved"] if kind == "RETRIEVER" else None),
                ("reranker.output_documents", trace["reranked"] if kind == "RERANKER" else None),
            ):
                if docs:
                    row[f"attributes.{key}"] = [
                        {"document.id": d, "document.content": t, "document.score": s}
                        for d, t, s in docs
                    ]
            if kind == "LLM":
                row["attributes.llm.token_count.prompt"] = trace["tokens"][0]
                row["attributes.llm.token_count.completion"] = trace["tokens"][1]
            out.append(row)
    return out


def otlp_export() -> dict[str, Any]:
    """OTLP JSON (an OTLP/HTTP JSON body, or a collector's file exporter line)."""

    def value(v: Any) -> dict[str, Any]:
        if isinstance(v, str):
            return {"stringValue": v}
        if isinstance(v, int):
            return {"intValue": str(v)}
        return {"doubleValue": v}

    spans = []
    for n, trace in enumerate(TRACES):
        for kind, (a, b) in TIMES.items():
            spans.append(
                {
                    "traceId": trace["trace"],
                    "spanId": f"{n}{kind}",
                    "name": kind.lower(),
                    "startTimeUnixNano": str(round((T0 + n + a) * 1e9)),
                    "endTimeUnixNano": str(round((T0 + n + b) * 1e9)),
                    "attributes": [
                        {"key": k, "value": value(v)}
                        for k, v in span_attributes(trace, kind).items()
                    ],
                }
            )
    return {
        "resourceSpans": [
            {"resource": {"attributes": []}, "scopeSpans": [{"scope": {}, "spans": spans}]}
        ]
    }


@pytest.fixture(params=["otel", "phoenix", "otlp"])
def spans_file(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    path = tmp_path / "traces.jsonl"
    if request.param == "otel":
        path.write_text("".join(json.dumps(s) + "\n" for s in otel_spans()))
    elif request.param == "phoenix":
        path = tmp_path / "traces.json"
        path.write_text(json.dumps(phoenix_rows(), indent=1))
    else:
        path.write_text(json.dumps(otlp_export()) + "\n")
    return path


@pytest.fixture
def oi_qrels(tmp_path: Path) -> Path:
    path = tmp_path / "qrels.txt"
    path.write_text(
        "".join(f"{q} 0 {d} {r}\n" for q, ls in OI_QRELS.items() for d, r in ls.items())
    )
    return path


def test_openinference_reads_as_two_stage_runs(spans_file: Path, oi_qrels: Path) -> None:
    log = ProblemLog()
    runs = read_inputs([spans_file, oi_qrels], None, log)
    assert [r.format for r in runs] == ["openinference", "openinference"]
    assert [r.info.name for r in runs] == ["traces", "traces@reranker"]
    assert [r.info.settings for r in runs] == [
        {"stage": "retriever", "trace_group": "traces"},
        {"stage": "reranker", "trace_group": "traces"},
    ]
    retriever, reranker = (list(r.queries) for r in runs)
    assert log.errors == []
    for stage, queries, key in (
        ("retriever", retriever, "retrieved"),
        ("reranker", reranker, "reranked"),
    ):
        assert [q.query_id for q in queries] == ["q1", "q3"], stage
        for q, trace in zip(queries, TRACES, strict=True):
            assert q.query == trace["query"]
            assert [(c.doc_id, c.text, c.score) for c in q.retrieved or ()] == [
                tuple(d) for d in trace[key]
            ]
            assert q.relevance == OI_QRELS[q.query_id]
            assert q.tokens == {"prompt": trace["tokens"][0], "completion": trace["tokens"][1]}
    # both stage runs hold the whole trace's stages, in the order they ran: the retriever
    # 0-120 ms, the reranker 120-170, the LLM 170-900; total = first start to last end
    for q in (*retriever, *reranker):
        assert q.latency_ms == {
            "retrieve": pytest.approx(120, abs=1e-3),
            "rerank": pytest.approx(50, abs=1e-3),
            "llm": pytest.approx(730, abs=1e-3),
            "total": pytest.approx(900, abs=1e-3),
        }
        assert list(q.latency_ms) == ["retrieve", "rerank", "llm", "total"]


def test_each_openinference_stage_equals_pytrec_eval(spans_file: Path, oi_qrels: Path) -> None:
    for stage, key in (("retriever", "retrieved"), ("reranker", "reranked")):
        run = {t["query_id"]: {d: s for d, _, s in t[key]} for t in TRACES}
        assert_same(ours([spans_file, oi_qrels], stage=stage), pytrec(run, OI_QRELS))


def test_openinference_stage_on_the_cli(spans_file: Path, oi_qrels: Path, tmp_path: Path) -> None:
    done = rageval("evaluate", str(spans_file), str(oi_qrels), "--metrics", "AP")
    assert done.returncode == 2
    assert "pick one with --stage" in done.stderr
    values = {}
    for stage in ("retriever", "reranker"):
        done = rageval(
            "evaluate",
            str(spans_file),
            str(oi_qrels),
            "--metrics",
            "AP",
            "--json",
            "--stage",
            stage,
        )
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        values[stage] = report["metrics"]["AP"]
    assert values["retriever"] != values["reranker"]
    db = tmp_path / "store.duckdb"
    done = rageval("import", str(spans_file), str(oi_qrels), db=db)
    assert done.returncode == 0, done.stderr
    with Store(db) as store:
        names = sorted(r.name for r in store.runs())
    assert names == [spans_file.stem, spans_file.stem + "@reranker"]


def test_openinference_name_names_both_stages(
    spans_file: Path, oi_qrels: Path, tmp_path: Path
) -> None:
    db = tmp_path / "store.duckdb"
    done = rageval_subprocess("import", str(spans_file), str(oi_qrels), "--name", "prod", db=db)
    assert done.returncode == 0, done.stderr
    with Store(db) as store:
        runs = {r.name: r for r in store.runs()}
        assert sorted(runs) == ["prod", "prod@reranker"]
        # the two stay one trace group under the new name (the sidebar's stage picker)
        assert {r.settings["trace_group"] for r in runs.values()} == {"prod"}
        assert runs["prod@reranker"].settings["stage"] == "reranker"
    # the name is then taken: a second import under it refuses with exit 2
    again = rageval_subprocess("import", str(spans_file), "--name", "prod", db=db)
    assert again.returncode == 2 and "already exists" in again.stderr
    # one stage picked: one run, the name as given
    one = rageval("import", str(spans_file), "--stage", "reranker", "--name", "rr", db=db)
    assert one.returncode == 0, one.stderr
    with Store(db) as store:
        assert "rr" in {r.name for r in store.runs()}
    # runs of different files are still not one name
    mixed = rageval(
        "import", str(spans_file), str(REPO / "sample_runs" / "bm25.jsonl"), "--name", "x", db=db
    )
    assert mixed.returncode == 2 and "--name needs exactly one run" in mixed.stderr


def test_openinference_stage_elsewhere_is_a_usage_error(ranx_files: tuple[Path, Path]) -> None:
    with pytest.raises(UsageError, match="OpenInference"):
        ours(list(ranx_files), stage="reranker")


def test_openinference_without_query_ids_keys_by_trace(tmp_path: Path) -> None:
    spans = [s for s in otel_spans() if s["attributes"]["openinference.span.kind"] == "RETRIEVER"]
    for s in spans:
        del s["attributes"]["metadata"]
    path = tmp_path / "spans.json"
    path.write_text(json.dumps(spans))
    (run,) = read_inputs([path], None, ProblemLog())
    assert [q.query_id for q in run.queries] == ["0x" + t["trace"] for t in TRACES]


def test_openinference_bad_spans_are_placed(tmp_path: Path) -> None:
    spans = otel_spans()
    spans[0]["attributes"]["retrieval.documents.1.document.score"] = "high"
    del spans[3]["attributes"]["retrieval.documents.0.document.id"]
    spans[4]["start_time"] = "yesterday"
    path = tmp_path / "spans.jsonl"
    path.write_text("".join(json.dumps(s) + "\n" for s in spans))
    assert problems([path]) == [
        f"{path}:5: start_time: expected a timestamp, got a string",
        f"{path}:1: attributes.retrieval.documents.1.document.score: expected a finite number, "
        "got a string",
        f"{path}:4: attributes.retrieval.documents.0.document.id: required",
    ]
    none = tmp_path / "none.jsonl"
    none.write_text(
        json.dumps({"name": "x", "context": {"trace_id": "t"}, "attributes": {}}) + "\n"
    )
    assert problems([none]) == [f"{none}:0: file: no RETRIEVER or RERANKER spans"]


# --- DeepEval and LlamaIndex -----------------------------------------------------------------------


def test_deepeval_dataset(tmp_path: Path) -> None:
    cases = [
        {
            "input": "What is the refund window?",
            "actual_output": "30 days.",
            "expected_output": "You can get a refund within 30 days.",
            "retrieval_context": [
                "Refunds are accepted within 30 days of purchase.",
                "Shipping is free.",
            ],
            "context": ["within 30 days of purchase"],
            "additional_metadata": {"topic": "refunds"},
        },
        {
            "input": "Do you ship abroad?",
            "actualOutput": "Yes.",
            "retrievalContext": ["Shipping is free.", "We ship to 40 countries."],
            "context": ["We ship to 40 countries"],
        },
    ]
    path = tmp_path / "dataset.json"
    path.write_text(json.dumps(cases, indent=2))
    (run,) = read_inputs([path], None, ProblemLog())
    assert run.format == "deepeval"
    first, second = run.queries
    assert first.query_id == "q1" and first.query == "What is the refund window?"
    assert [(c.doc_id, c.text) for c in first.retrieved or ()] == [
        ("ctx1", "Refunds are accepted within 30 days of purchase."),
        ("ctx2", "Shipping is free."),
    ]
    assert first.evidence == ("within 30 days of purchase",)
    assert first.answer == "30 days." and first.reference_answer.startswith("You can")  # type: ignore[union-attr]
    assert first.tags == {"topic": "refunds"}
    assert second.answer == "Yes." and second.retrieved[1].text == "We ship to 40 countries."  # type: ignore[index]
    with rv.load([path]) as loaded:
        report = rv.evaluate(loaded, ["EvidenceRecall@1", "EvidenceRecall@2"])
    # the evidence is in ctx1 of the first case and ctx2 of the second
    assert report.metrics["EvidenceRecall@1"] == pytest.approx(0.5)
    assert report.metrics["EvidenceRecall@2"] == pytest.approx(1.0)


def test_deepeval_test_cases_object_and_errors(tmp_path: Path) -> None:
    path = tmp_path / "cases.json"
    path.write_text(json.dumps({"test_cases": [{"input": "a", "actual_output": "b"}]}))
    (run,) = read_inputs([path], None, ProblemLog())
    assert run.format == "deepeval" and [q.query for q in run.queries] == ["a"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        json.dumps({"input": "a", "actual_output": 3})
        + "\n"
        + json.dumps({"input": "", "actual_output": "x", "retrieval_context": "one"})
        + "\n"
    )
    assert problems([bad]) == [
        f"{bad}:1: actual_output: expected a string, got 3",
        f"{bad}:2: input: expected a non-empty string, got a string",
        f"{bad}:2: retrieval_context: expected an array, got a string",
    ]


def llama_results() -> list[dict[str, Any]]:
    """RetrievalEvalResult.model_dump() of three queries, with LlamaIndex's own hit_rate, mrr."""
    rows = []
    for query, expected, retrieved in (
        ("q one", ["n1"], ["n3", "n1", "n2"]),
        ("q two", ["n4", "n5"], ["n5", "n6"]),
        ("q three", ["n7"], ["n8", "n9"]),
    ):
        first = next((i + 1 for i, r in enumerate(retrieved) if r in expected), None)
        rows.append(
            {
                "query": query,
                "expected_ids": expected,
                "expected_texts": None,
                "retrieved_ids": retrieved,
                "retrieved_texts": [f"text of {r}" for r in retrieved],
                "mode": "text",
                "metric_dict": {
                    "hit_rate": {"score": 1.0 if first else 0.0, "metadata": {}},
                    "mrr": {"score": 1.0 / first if first else 0.0, "metadata": {}},
                },
            }
        )
    return rows


def test_llamaindex_results_equal_their_own_scores_and_pytrec_eval(tmp_path: Path) -> None:
    rows = llama_results()
    path = tmp_path / "retrieval_eval.json"
    path.write_text(json.dumps(rows))
    (run,) = read_inputs([path], None, ProblemLog())
    assert run.format == "llamaindex"
    queries = list(run.queries)
    assert [q.query_id for q in queries] == ["q1", "q2", "q3"]
    assert queries[0].judge == {"hit_rate": 1.0, "mrr": 0.5}
    assert queries[0].tags == {"mode": "text"}
    with rv.load([path]) as loaded:
        report = rv.evaluate(loaded, ["RR", "AP", "P@5"])
    assert report.metrics["RR"] == pytest.approx(
        sum(r["metric_dict"]["mrr"]["score"] for r in rows) / len(rows)
    )
    ranked = {
        f"q{i + 1}": {d: float(-rank) for rank, d in enumerate(r["retrieved_ids"])}
        for i, r in enumerate(rows)
    }
    qrels = {f"q{i + 1}": dict.fromkeys(r["expected_ids"], 1) for i, r in enumerate(rows)}
    expected = pytrec(ranked, qrels)
    for name in ("RR", "AP", "P@5"):
        assert report.metrics[name] == pytest.approx(expected[name])


def test_llamaindex_errors_are_placed(tmp_path: Path) -> None:
    rows = llama_results()
    rows[1]["retrieved_texts"] = ["only one"]
    rows[2]["retrieved_ids"] = ["n8", "n8"]
    path = tmp_path / "results.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert problems([path]) == [
        f"{path}:2: retrieved_texts: 1 texts for 2 retrieved_ids",
        f'{path}:3: retrieved_ids: "n8" appears more than once',
    ]


# --- detection -------------------------------------------------------------------------------------


def test_each_new_format_is_detected_and_can_be_forced(tmp_path: Path) -> None:
    files = {
        "deepeval": ("d.json", json.dumps([{"input": "a", "actual_output": "b"}])),
        "llamaindex": ("l.json", json.dumps(llama_results())),
        "openinference": ("o.jsonl", "".join(json.dumps(s) + "\n" for s in otel_spans())),
        "ranx": ("r.json", json.dumps(RUN)),
    }
    for fmt, (name, text) in files.items():
        path = tmp_path / name
        path.write_text(text)
        assert {f for f, _ in formats_of([path])} == {fmt}
        assert {f for f, _ in formats_of([path], fmt)} == {fmt}
    run = write_trec_run(tmp_path / "run.trec", RUN)
    assert formats_of([run], "beir")[0][0] == "beir"


def test_a_folder_that_is_no_dataset(tmp_path: Path) -> None:
    folder = tmp_path / "stuff"
    folder.mkdir()
    with pytest.raises(InputError) as e:
        read_inputs([folder], None, ProblemLog())
    assert [str(p) for p in e.value.problems] == [
        f"{folder}:0: file: a folder, not a run (a BEIR dataset folder holds corpus.jsonl, "
        "queries.jsonl and qrels/)"
    ]


def test_ranx_roles_by_name_then_by_numbers(tmp_path: Path) -> None:
    from rageval_core.formats import ranx

    integers, floats = b'{"q1": {"d1": 1, "d2": 2}}', b'{"q1": {"d1": 1.0}}'
    assert ranx.sniff(tmp_path / "bm25_run.json", integers) == "run"
    assert ranx.sniff(tmp_path / "my_qrels.json", floats) == "qrels"
    assert ranx.sniff(tmp_path / "x.json", integers) == "qrels"
    assert ranx.sniff(tmp_path / "x.json", floats) == "run"
    assert ranx.sniff(tmp_path / "x.json", b'{"q1": ["d1"]}') is None


def test_reader_options_on_a_stored_run_are_a_usage_error(tmp_path: Path) -> None:
    done = rageval("evaluate", "some-stored-run", "--stage", "reranker", db=tmp_path / "s.duckdb")
    assert done.returncode == 2
    assert "apply when files are read" in done.stderr


def test_ranx_empty_queries_keep_their_roles(tmp_path: Path) -> None:
    run, qrels = tmp_path / "run.json", tmp_path / "qrels.json"
    run.write_text('{"q1": {"d1": 0.5}, "q2": {}}')
    qrels.write_text('{"q1": {}}')
    for fmt in (None, "ranx"):
        (parsed,) = read_inputs([run, qrels], fmt, ProblemLog())
        assert parsed.sources == (str(run), str(qrels))
        queries = {q.query_id: q for q in parsed.queries}
        assert queries["q2"].retrieved == () and queries["q1"].relevance == {}


def test_openinference_nested_attributes_as_phoenix_keeps_them(tmp_path: Path) -> None:
    """Phoenix's span records nest attributes ({"retrieval": {"documents": [{"document": ...}]}})."""
    span = {
        "name": "retrieve",
        "context": {"trace_id": "t1", "span_id": "s1"},
        "span_kind": "RETRIEVER",
        "start_time": "2024-05-01T10:00:00+00:00",
        "end_time": "2024-05-01T10:00:00.040000+00:00",
        "attributes": {
            "input": {"value": "who wrote Hamlet?"},
            "metadata": {"query_id": "q3"},
            "retrieval": {
                "documents": [
                    {"document": {"id": "d4", "content": "Shakespeare.", "score": 1.5}},
                    {"document": {"id": "d8", "content": "A play.", "score": 0.4}},
                ]
            },
        },
    }
    path = tmp_path / "phoenix_spans.json"
    path.write_text(json.dumps([span]))
    (run,) = read_inputs([path], None, ProblemLog())
    (query,) = run.queries
    assert (query.query_id, query.query) == ("q3", "who wrote Hamlet?")
    assert [(c.doc_id, c.text, c.score) for c in query.retrieved or ()] == [
        ("d4", "Shakespeare.", 1.5),
        ("d8", "A play.", 0.4),
    ]
    # a trace of one span: its total is that span
    assert query.latency_ms == {
        "retrieve": pytest.approx(40, abs=1e-3),
        "total": pytest.approx(40, abs=1e-3),
    }


def test_deepeval_saved_test_run_gives_judge_scores(tmp_path: Path) -> None:
    run = {
        "testCases": [
            {
                "name": "test_case_0",
                "input": "Do you ship abroad?",
                "actualOutput": "Yes.",
                "retrievalContext": ["We ship to 40 countries."],
                "metricsData": [
                    {"name": "Contextual Recall", "score": 0.75, "success": True},
                    {"name": "Faithfulness", "score": None, "success": False},
                ],
            }
        ]
    }
    path = tmp_path / "latest_test_run.json"
    path.write_text(json.dumps(run))
    (parsed,) = read_inputs([path], None, ProblemLog())
    (query,) = parsed.queries
    assert query.query_id == "test_case_0"
    assert query.judge == {"Contextual Recall": 0.75}
    assert query.retrieved[0].text == "We ship to 40 countries."  # type: ignore[index]
