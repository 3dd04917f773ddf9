"""The demo generator: a deterministic corpus, gold that agrees with the chunks, real retrievers."""

from __future__ import annotations

import json
import math
import random
import re
from collections import Counter
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rapidfuzz import fuzz

from rageval_core.demo import MAX_QUERIES, build_corpus, build_questions, generate
from rageval_core.demo.corpus import MAX_CHUNK_CHARS, Corpus, chunk_document, split_units
from rageval_core.demo.paraphrase import lcs_length, similarity
from rageval_core.demo.questions import GoldQuery
from rageval_core.demo.retrievers import BM25, CharTfidf, char_ngrams, rrf, tokenize
from rageval_core.errors import ProblemLog
from rageval_core.formats import native
from tests.cli import rageval

SEED = 7
N = 40
RUNS = ("bm25", "tfidf_char", "hybrid_rerank")


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return build_corpus(SEED)


@pytest.fixture(scope="module")
def questions(corpus: Corpus) -> list[GoldQuery]:
    # the full-size set: more of every rare case (split, paraphrased, absent evidence)
    return build_questions(corpus, 360, SEED)


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Path], list[str]]:
    out = tmp_path_factory.mktemp("demo")
    messages: list[str] = []
    paths = generate(out, n_queries=N, seed=SEED, progress=messages.append)
    return paths, messages


def _records(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return json.loads(lines[0]), [json.loads(line) for line in lines[1:]]


def _recall_at_10(records: list[dict[str, Any]]) -> float:
    """Mean over queries with relevant chunks of |relevant in top 10| / |relevant|."""
    values = []
    for r in records:
        relevant = {d for d, label in r.get("relevance", {}).items() if label > 0}
        if relevant:
            got = {c["doc_id"] for c in r["retrieved"][:10]}
            values.append(len(got & relevant) / len(relevant))
    return sum(values) / len(values)


# --- the written runs ---------------------------------------------------------------------------


def test_generate_writes_three_native_runs(written: tuple[list[Path], list[str]]) -> None:
    paths, messages = written
    assert [p.name for p in paths] == [f"{n}.jsonl" for n in RUNS]
    created = []
    for path, name in zip(paths, RUNS, strict=True):
        header, records = _records(path)
        info = header["rageval_run"]
        assert info["name"] == name
        assert info["settings"]["top_k"] == 10
        assert info["prices_per_1k"] == {"prompt": 0.00015, "completion": 0.0006}
        created.append(info["created_at"])
        assert len(records) == N
        for r in records:
            assert re.fullmatch(r"q\d{4}", r["query_id"])
            assert 1 <= len(r["retrieved"]) <= 10
            assert all(isinstance(c["doc_id"], str) and c["text"] for c in r["retrieved"])
            scores = [c["score"] for c in r["retrieved"]]
            assert scores == sorted(scores, reverse=True)
    assert created == sorted(set(created))  # distinct, in run order, so trends have an order
    hybrid = _records(paths[2])[0]["rageval_run"]["settings"]
    assert hybrid["prefetch_limit"] == 30 and hybrid["rerank_top_n"] == 10
    assert any("wrote" in m for m in messages)


def test_native_reader_reads_the_runs_without_problems(
    written: tuple[list[Path], list[str]],
) -> None:
    for path, name in zip(written[0], RUNS, strict=True):
        log = ProblemLog()
        parsed = native.read(path, None, log)
        queries = list(parsed.queries)
        assert log.problems == []
        assert parsed.info.name == name
        assert parsed.info.price_completion_per_1k == 0.0006
        assert len(queries) == N and all(q.retrieved for q in queries)


def test_runs_share_one_question_set(written: tuple[list[Path], list[str]]) -> None:
    keys = ("query_id", "query", "relevance", "evidence", "reference_answer", "tags")
    first = [{k: r.get(k) for k in keys} for r in _records(written[0][0])[1]]
    for path in written[0][1:]:
        assert [{k: r.get(k) for k in keys} for r in _records(path)[1]] == first
    retrieved = [[c["doc_id"] for r in _records(p)[1] for c in r["retrieved"]] for p in written[0]]
    assert retrieved[0] != retrieved[1] != retrieved[2]  # three different retrievers


def test_latency_stages_and_tokens_are_consistent(written: tuple[list[Path], list[str]]) -> None:
    for path, name in zip(written[0], RUNS, strict=True):
        for r in _records(path)[1]:
            stages = r["latency_ms"]
            expected = {"retrieval", "generation", "total"} | (
                {"rerank"} if name == "hybrid_rerank" else set()
            )
            assert set(stages) == expected
            parts = sum(v for k, v in stages.items() if k != "total")
            assert stages["total"] == pytest.approx(parts, abs=0.01)
            context = sum(math.ceil(len(c["text"]) / 4) for c in r["retrieved"])
            assert r["tokens"]["prompt"] > context
            assert r["tokens"]["completion"] >= math.ceil(len(r["answer"]) / 4)


def test_hybrid_has_the_best_recall_at_10(written: tuple[list[Path], list[str]]) -> None:
    recall = {name: _recall_at_10(_records(p)[1]) for p, name in zip(written[0], RUNS, strict=True)}
    assert recall["hybrid_rerank"] >= recall["bm25"]
    assert recall["hybrid_rerank"] >= recall["tfidf_char"]
    assert 0.2 < recall["hybrid_rerank"] < 1.0  # neither trivial nor hopeless


# --- the corpus ---------------------------------------------------------------------------------


def test_corpus_is_deterministic_for_a_seed(corpus: Corpus) -> None:
    again = build_corpus(SEED)
    assert [(d.name, d.text) for d in again.documents] == [
        (d.name, d.text) for d in corpus.documents
    ]
    assert [c.chunk_id for c in again.chunks] == [c.chunk_id for c in corpus.chunks]
    other = build_corpus(SEED + 1)
    assert [d.text for d in other.documents] != [d.text for d in corpus.documents]


def test_collection_and_questions_are_those_of_sample_runs(
    corpus: Corpus, questions: list[GoldQuery]
) -> None:
    """sample_runs/ was written by `rageval demo` (seed 7, 360 queries): the same text comes back.

    Pins the documents, chunks and questions the templates in rageval_core/demo/data/ give, so
    an edit of the data that changes them shows up here (then regenerate sample_runs/).
    """
    header, records = _records(Path(__file__).resolve().parents[2] / "sample_runs" / "bm25.jsonl")
    settings = header["rageval_run"]["settings"]
    assert (settings["demo_seed"], settings["n_documents"], settings["n_chunks"]) == (
        SEED,
        len(corpus.documents),
        len(corpus.chunks),
    )
    text_of = {c.chunk_id: c.text for c in corpus.chunks}
    assert len(records) == len(questions)
    for r, q in zip(records, questions, strict=True):
        assert (r["query_id"], r["query"], r["reference_answer"]) == (
            q.query_id,
            q.text,
            q.reference_answer,
        )
        assert r.get("relevance", {}) == q.relevance and r.get("evidence", []) == list(q.evidence)
        assert (r["tags"]["query_type"], r["tags"]["evidence"], r["tags"].get("wording")) == (
            q.query_type,
            q.evidence_form,
            q.wording,
        )
        assert all(c["text"] == text_of[c["doc_id"]] for c in r["retrieved"])


def test_corpus_shape(corpus: Corpus) -> None:
    assert 150 <= len(corpus.documents) <= 250
    names = [d.name for d in corpus.documents]
    assert len(set(names)) == len(names)
    assert all(
        re.fullmatch(r"(life|home|auto)_policy_\d{3}\.md|annual_report_\d{3}\.md", n) for n in names
    )
    families = Counter(d.family for d in corpus.documents)
    assert sum(1 for n in families.values() if n > 1) >= 10  # near-duplicate distractors exist
    for d in corpus.documents:
        for f in d.facts:
            assert f.value in d.text[f.start : f.end], (f.kind, f.value)


def test_chunks_are_slices_that_cover_each_document(corpus: Corpus) -> None:
    ids = [c.chunk_id for c in corpus.chunks]
    assert len(set(ids)) == len(ids)
    for d in corpus.documents:
        chunks = corpus.doc_chunks(d.name)
        assert [c.chunk_id for c in chunks] == [f"{d.name}#{k}" for k in range(len(chunks))]
        for c in chunks:
            assert c.text == d.text[c.start : c.end]
            assert 0 < len(c.text) <= MAX_CHUNK_CHARS
        for start, end in split_units(d.text):  # every sentence lies in some chunk
            assert any(c.start <= start and end <= c.end for c in chunks)


def test_chunker_keeps_sentences_whole_and_overlaps() -> None:
    text = "# Title\n\n" + " ".join(
        f"Sentence number {i} says something fairly long here." for i in range(40)
    )
    chunks = chunk_document("x.md", text, max_chars=200, overlap_chars=30)
    assert len(chunks) > 5
    for prev, nxt in pairwise(chunks):
        assert prev.text.endswith(".")  # a chunk ends at a sentence end
        assert nxt.start < prev.end  # and the next one overlaps it a little
        assert prev.end - nxt.start <= 30


# --- the questions ------------------------------------------------------------------------------


def test_questions_are_deterministic_and_mixed(corpus: Corpus, questions: list[GoldQuery]) -> None:
    again = build_questions(corpus, 360, SEED)
    assert [(q.query_id, q.text, q.evidence, q.relevance) for q in again] == [
        (q.query_id, q.text, q.evidence, q.relevance) for q in questions
    ]
    assert len(questions) == 360 and len({q.text for q in questions}) == 360
    types = Counter(q.query_type for q in questions)
    assert set(types) == {"numeric", "definition", "comparison", "multi_hop", "unanswerable"}
    forms = Counter(q.evidence_form for q in questions)
    assert set(forms) == {"exact", "paraphrased", "split", "absent", "none"}
    assert {q.source for q in questions} == {"policy", "10-K"}
    small = build_questions(corpus, N, SEED)
    assert len(small) == N and len({q.query_type for q in small}) == 5


def test_relevance_ids_exist_and_are_graded(corpus: Corpus, questions: list[GoldQuery]) -> None:
    ids = {c.chunk_id for c in corpus.chunks}
    for q in questions:
        assert set(q.relevance) <= ids
        assert set(q.relevance.values()) <= {1, 2}
        if q.query_type == "unanswerable":
            assert q.relevance == {}
        else:
            assert q.relevance, q.query_id


def test_exact_evidence_is_in_a_relevant_chunk(corpus: Corpus, questions: list[GoldQuery]) -> None:
    text = {c.chunk_id: c.text for c in corpus.chunks}
    checked = 0
    for q in questions:
        if q.evidence_form != "exact":
            continue
        for span in q.evidence:
            holders = {cid for cid, t in text.items() if span in t}
            assert holders & set(q.relevance), (q.query_id, span)
            checked += 1
        # a chunk graded 2 holds a whole answer span
        for cid, label in q.relevance.items():
            if label == 2:
                assert any(span in text[cid] for span in q.evidence)
    assert checked > 200


def test_split_evidence_crosses_a_chunk_boundary(
    corpus: Corpus, questions: list[GoldQuery]
) -> None:
    all_text = [c.text for c in corpus.chunks]
    text = {c.chunk_id: c.text for c in corpus.chunks}
    split = [q for q in questions if q.evidence_form == "split"]
    assert len(split) >= 10
    for q in split:
        broken = [s for s in q.evidence if not any(s in t for t in all_text)]
        assert broken, q.query_id
        for span in broken:
            head = [cid for cid in q.relevance if span[:30] in text[cid]]
            tail = [cid for cid in q.relevance if span[-30:] in text[cid]]
            assert head and tail and set(head) != set(tail)


def test_paraphrased_and_absent_evidence(corpus: Corpus, questions: list[GoldQuery]) -> None:
    all_text = [c.text for c in corpus.chunks]
    sims = []
    for q in questions:
        if q.evidence_form == "paraphrased":
            (span,), (source,) = q.evidence, q.source_spans
            assert not any(span in t for t in all_text)
            sim = similarity(span, source)
            assert 0.5 <= sim < 1.0
            sims.append(sim)
        elif q.evidence_form == "absent":
            (span,) = q.evidence
            assert not any(span in t for t in all_text) and q.relevance == {}
            # close to a near-duplicate's sentence: a too-lenient fuzzy threshold matches it
            assert similarity(span, q.source_spans[0]) > 0.8
        elif q.evidence_form == "none":
            assert q.evidence == () and q.relevance == {}
    assert len(sims) >= 20
    assert min(sims) < 0.75 and max(sims) > 0.88  # a range of similarities, not one value


# --- the retrievers -----------------------------------------------------------------------------


def test_similarity_is_rapidfuzz_ratio() -> None:
    rng = random.Random(3)
    for _ in range(200):
        a = "".join(rng.choice("abcde $1,0.") for _ in range(rng.randrange(0, 60)))
        b = "".join(rng.choice("abcde $1,0.") for _ in range(rng.randrange(0, 60)))
        assert similarity(a, b) == pytest.approx(fuzz.ratio(a, b) / 100)
    assert lcs_length("ABCBDAB", "BDCABA") == 4  # the textbook example


def test_bm25_matches_the_formula_by_hand() -> None:
    texts = ["the cat sat on the mat", "cat cat dog", "a dog barked at the mailman twice"]
    bm = BM25(texts, k1=1.2, b=0.75)
    docs = [tokenize(t) for t in texts]
    avgdl = sum(map(len, docs)) / 3
    expected = []
    for d in docs:
        score = 0.0
        for term in ("cat", "dog"):
            df = sum(term in x for x in docs)
            idf = math.log(1 + (3 - df + 0.5) / (df + 0.5))
            tf = d.count(term)
            score += idf * tf * 2.2 / (tf + 1.2 * (1 - 0.75 + 0.75 * len(d) / avgdl))
        expected.append(score)
    np.testing.assert_allclose(bm.scores("cat dog?"), expected)
    assert bm.search("cat dog", 2)[0][0] == 1


def test_bm25_ranks_the_chunk_with_a_rare_exact_term_first(corpus: Corpus) -> None:
    bm = BM25([c.text for c in corpus.chunks])
    policies = [d for d in corpus.documents if d.source == "policy"][:15]
    for d in policies:
        code = d.ident["code"]  # e.g. LP-20417: its digits occur in one chunk only
        holders = [i for i, c in enumerate(corpus.chunks) if code in c.text]
        assert len(holders) == 1
        assert bm.search(f"policy form {code}", 10)[0][0] == holders[0]


def test_char_tfidf_matches_a_dense_computation() -> None:
    texts = ["Deductible $1,500 per claim.", "The deductibles are low", "Revenue grew 7.3%"]
    model = CharTfidf(texts)
    grams = [char_ngrams(t) for t in texts]
    vocab = sorted(set().union(*grams))
    tf = np.array([[1 + math.log(g[v]) if g[v] else 0.0 for v in vocab] for g in grams])
    df = (tf > 0).sum(axis=0)
    idf = np.log(4 / (1 + df)) + 1
    x = tf * idf
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    qg = char_ngrams("deductible 1500")
    q = np.array([(1 + math.log(qg[v])) if qg[v] else 0.0 for v in vocab]) * idf
    q /= np.linalg.norm(q)
    np.testing.assert_allclose(model.scores("deductible 1500"), x @ q, rtol=1e-9)
    assert model.search("deductible 1500", 1)[0][0] == 0


def test_rrf_by_hand() -> None:
    fused = rrf([[(1, 9.0), (2, 5.0)], [(2, 0.9), (3, 0.1)]], k=60)
    assert [i for i, _ in fused] == [2, 1, 3]
    assert fused[0][1] == pytest.approx(1 / 62 + 1 / 61)
    assert fused[1][1] == pytest.approx(1 / 61)


def test_more_questions_than_the_collection_holds_is_refused(
    corpus: Corpus, tmp_path: Path
) -> None:
    """`rageval demo --queries N` gives N queries or says how many it can; never fewer in silence."""
    out = tmp_path / "out"
    for n in ("10000", "0"):
        r = rageval("demo", "--out", str(out), "--queries", n)
        assert r.returncode == 2 and "Traceback" not in r.stderr
        assert f"--queries {n}: the demo collection gives 1 to 5,000 distinct questions" in r.stderr
    assert not out.exists()  # nothing was written
    # the most it offers is given, of every type (a type that runs out is filled in by the others)
    most = build_questions(corpus, MAX_QUERIES, SEED)
    assert len(most) == MAX_QUERIES == len({q.text for q in most})
    assert {q.query_type for q in most} == {
        q.query_type for q in build_questions(corpus, 360, SEED)
    }


def test_demo_with_db_imports_the_runs_it_writes(tmp_path: Path) -> None:
    db = tmp_path / "demo.duckdb"
    r = rageval("demo", "--out", str(tmp_path / "out"), "--queries", "6", db=db)
    assert r.returncode == 0, r.stderr
    listed = {
        x["name"]: x["n_queries"] for x in json.loads(rageval("runs", "--json", db=db).stdout)
    }
    assert listed == {name: 6 for name in RUNS}
    plain = rageval("demo", "--out", str(tmp_path / "plain"), "--queries", "6")
    assert plain.returncode == 0 and "import them with: rageval import" in plain.stdout
