"""Gold evidence spans added in rageval (issue 31, point 2): they join the query's own spans for
the evidence metrics, the drilldown and the native export, scored against the chunks like the
run's own, one new span at a time; taking one back removes its effect."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

import rageval_core.rundata as rundata
from rageval_core import api
from rageval_core.errors import ProblemLog
from rageval_core.evaluation.drilldown import query_detail
from rageval_core.evaluation.report import Settings
from rageval_core.formats import read_inputs
from rageval_core.importing import export_native
from rageval_core.rundata import load_run_data
from rageval_core.store import Store
from rageval_core.store.ground_truth import add_span, remove_span

WORDS = [
    "tax",
    "rate",
    "fuel",
    "charity",
    "audit",
    "board",
    "annual",
    "report",
    "revenue",
    "grant",
    "fund",
    "trust",
]
METRICS = [
    "EvidenceRecall@5",
    "PerQueryCoverage@5",
    "FullCoverageRate@5",
    "ContextCoverage",
    "BestRank",
    "P@5",
    "nDCG@5",
]


def _sentence(rnd: random.Random, number: int | None = None) -> str:
    words = rnd.sample(WORDS, 5)
    return " ".join(words) + (f" {number}" if number is not None else "")


def _records(with_added: bool) -> list[dict[str, object]]:
    rnd = random.Random(12)
    out: list[dict[str, object]] = [{"rageval_run": {"name": "dense"}}]
    chunks_of: dict[str, list[str]] = {}
    for q in range(8):
        qid = f"q{q}"
        texts = [f"{_sentence(rnd)}. {_sentence(rnd, rnd.choice([2019, 2020]))}." for _ in range(6)]
        chunks_of[qid] = texts
        evidence = [texts[rnd.randrange(6)].split(". ")[0]] if q % 3 != 1 else []
        out.append(
            {
                "query_id": qid,
                "retrieved": [
                    {"doc_id": f"d{q}-{r}", "text": t, "score": 10.0 - r}
                    for r, t in enumerate(texts)
                ],
                "evidence": evidence,
            }
        )
    spans = _spans(chunks_of)
    if with_added:
        for rec in out[1:]:
            qid = str(rec["query_id"])
            if qid in spans:
                rec["evidence"] = [*rec["evidence"], spans[qid]]  # type: ignore[misc]
    return out


def _spans(chunks_of: dict[str, list[str]] | None = None) -> dict[str, str]:
    """The added spans: a sentence of a chunk at rank 3 (q1), a paraphrase (q4), a sentence
    with its number changed (q6: the numbers guard refuses it)."""
    if chunks_of is None:
        rnd = random.Random(12)
        chunks_of = {}
        for q in range(8):
            chunks_of[f"q{q}"] = [
                f"{_sentence(rnd)}. {_sentence(rnd, rnd.choice([2019, 2020]))}." for _ in range(6)
            ]
            if q % 3 != 1:
                rnd.randrange(6)
    second = chunks_of["q6"][1].split(". ")[1].rstrip(".")
    return {
        "q1": chunks_of["q1"][2].split(". ")[1].rstrip("."),
        "q4": " ".join(reversed(chunks_of["q4"][0].split(". ")[0].split())),
        "q6": second[:-4] + ("2021" if second.endswith(("2019", "2020")) else "1999"),
    }


def _write(path: Path, records: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _import(store: Store, path: Path) -> str:
    log = ProblemLog()
    return store.import_run(read_inputs([path], None, log)[0], log).run.name


def _report(store: Store, name: str, **kw: object) -> str:
    """The run and per-query values as JSON text (NaN equal to NaN)."""
    with api.load(name, store=store) as run:
        r = api.evaluate(run, METRICS, relevance="evidence", **kw)
    per_query = {m: v.tolist() for m, v in r.per_query.items()}
    return json.dumps({"metrics": r.metrics, "per_query": per_query})


@pytest.mark.parametrize("scorer", ["partial", "token_set"])
def test_an_added_span_equals_importing_the_run_with_it(tmp_path: Path, scorer: str) -> None:
    base = _write(tmp_path / "base.jsonl", _records(False))
    full = _write(tmp_path / "full.jsonl", _records(True))
    with Store(tmp_path / "a.duckdb") as a, Store(tmp_path / "b.duckdb") as b:
        name = _import(a, base)
        before = _report(a, name, scorer=scorer)
        for qid, text in _spans().items():
            assert add_span(a, qid, text, annotator="ann")
        expected = _report(b, _import(b, full), scorer=scorer)
        got = _report(a, name, scorer=scorer)
        assert got == expected and got != before
        # taken back: the run's own spans alone again
        for qid, text in _spans().items():
            assert remove_span(a, qid, text)
        assert _report(a, name, scorer=scorer) == before


def test_only_a_new_span_is_scored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base = _write(tmp_path / "base.jsonl", _records(False))
    scored: list[list[tuple[int, str]]] = []
    real = rundata.score_spans

    def counting(store: Store, run_id: int, key: object, spans: list) -> list:  # type: ignore[type-arg]
        scored.append(list(spans))
        return real(store, run_id, key, spans)  # type: ignore[arg-type]

    monkeypatch.setattr(rundata, "score_spans", counting)
    spans = list(_spans().items())
    with Store(tmp_path / "a.duckdb") as a:
        name = _import(a, base)
        with api.load(name, store=a) as run:
            add_span(a, *spans[0], annotator="ann")
            api.evaluate(run, ["EvidenceRecall@5"])
            add_span(a, *spans[1], annotator="ann")
            api.evaluate(run, ["EvidenceRecall@5"])
            api.evaluate(run, ["EvidenceRecall@5"], threshold=0.5)  # a move: nothing scored
    assert [[text for _, text in s] for s in scored] == [[spans[0][1]], [spans[1][1]]]


def test_the_drilldown_says_which_spans_were_added(tmp_path: Path) -> None:
    base = _write(tmp_path / "base.jsonl", _records(False))
    full = _write(tmp_path / "full.jsonl", _records(True))
    with Store(tmp_path / "a.duckdb") as a, Store(tmp_path / "b.duckdb") as b:
        name = _import(a, base)
        for qid, text in _spans().items():
            add_span(a, qid, text, annotator="ann")
        data_a, data_b = load_run_data(a, name), load_run_data(b, _import(b, full))
        for qidx in (1, 4, 6):
            got = query_detail(a, data_a, qidx, Settings())
            want = query_detail(b, data_b, qidx, Settings())
            assert [(s.text, s.first_rank, s.best_score) for s in got.spans] == [
                (s.text, s.first_rank, s.best_score) for s in want.spans
            ]
            assert np.array_equal(got.scores, want.scores)
            assert [c.match_eidx for c in got.chunks] == [c.match_eidx for c in want.chunks]
            assert [s.added_by for s in got.spans][-1] == "ann"
            assert all(s.added_by is None for s in want.spans)
        own = query_detail(a, data_a, 0, Settings())  # a query nobody added to
        assert all(s.added_by is None for s in own.spans)


def test_the_native_export_carries_added_spans_and_reads_back_as_the_full_run(
    tmp_path: Path,
) -> None:
    base = _write(tmp_path / "base.jsonl", _records(False))
    full = _write(tmp_path / "full.jsonl", _records(True))
    with Store(tmp_path / "a.duckdb") as a, Store(tmp_path / "b.duckdb") as b:
        name = _import(a, base)
        for qid, text in _spans().items():
            add_span(a, qid, text, annotator="ann")
        out = tmp_path / "out.jsonl"
        export_native(a, name, out)
        with Store(tmp_path / "c.duckdb") as c:
            again = _import(c, out)
            assert c.run(again).content_hash == b.run(_import(b, full)).content_hash
