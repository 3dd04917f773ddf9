"""Run the three demo retrievers over the question set and write them as native JSONL runs.

Retrieval and rerank latencies are measured (time.perf_counter around each stage). Generation is
simulated: no model is called. Its latency comes from a seeded model of prefill and decoding
time driven by the token counts, and its answer is the gold statement reworded, or a wrong or
abstaining answer drawn with a probability that depends on whether the evidence was retrieved.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rageval_core.demo.corpus import MAX_CHUNK_CHARS, OVERLAP_CHARS, Corpus, Document
from rageval_core.demo.questions import ABSTAIN, GoldQuery
from rageval_core.demo.retrievers import BM25, CharTfidf, Hit, Reranker, rrf
from rageval_core.formats.native import write_native
from rageval_core.model import Chunk, Query, RunInfo

TOP_K = 10
PREFETCH = 30
RRF_K = 60
MODEL = "gpt-4o-mini-2024-07-18"
PRICES_PER_1K = {"prompt": 0.00015, "completion": 0.0006}
#: tokens of the system prompt and answer instructions around the context
PROMPT_OVERHEAD_TOKENS = 96


@dataclass(frozen=True, slots=True)
class RunSpec:
    """One demo run: its name, header facts and the retrieval function it measures."""

    name: str
    created_at: str
    description: str
    settings: dict[str, Any]


SPECS = (
    RunSpec(
        "bm25",
        "2024-05-06T09:12:00Z",
        "BM25 (k1=1.2, b=0.75) over lower-cased word and number tokens, stopwords removed.",
        {
            "retriever": "bm25",
            "k1": 1.2,
            "b": 0.75,
            "top_k": TOP_K,
            "score_threshold": 0.0,
            "prefetch_limit": None,
            "rerank_top_n": None,
        },
    ),
    RunSpec(
        "tfidf_char",
        "2024-05-09T14:30:00Z",
        "Cosine similarity of character 3-5-gram TF-IDF vectors (sublinear tf, smoothed idf).",
        {
            "retriever": "tfidf_char",
            "ngram_range": [3, 5],
            "top_k": TOP_K,
            "score_threshold": 0.0,
            "prefetch_limit": None,
            "rerank_top_n": None,
        },
    ),
    RunSpec(
        "hybrid_rerank",
        "2024-05-13T10:05:00Z",
        "BM25 + char TF-IDF, top 30 of each fused by reciprocal rank fusion (k=60), then a "
        "feature reranker (term coverage, numbers, bigrams, proximity, document title) keeps 10.",
        {
            "retriever": "hybrid_rrf_rerank",
            "fusion": "rrf",
            "rrf_k": RRF_K,
            "top_k": TOP_K,
            "score_threshold": 0.0,
            "prefetch_limit": PREFETCH,
            "rerank_top_n": TOP_K,
            "reranker": "cross-features-v1",
        },
    ),
)


def doc_title(doc: Document) -> str:
    """The identifying line of a document that the reranker's title feature matches."""
    i = doc.ident
    if doc.source == "policy":
        return f"{i['plan']} {i['insurer']} policy form {i['code']} {i['edition']} edition"
    return f"{i['company']} annual report fiscal {i['year']}"


class Pipelines:
    """The indexes over the corpus' chunks and the three retrieval pipelines."""

    def __init__(self, corpus: Corpus) -> None:
        self.chunks = corpus.chunks
        texts = [c.text for c in corpus.chunks]
        self.bm25 = BM25(texts)
        self.tfidf = CharTfidf(texts)
        self.reranker = Reranker(texts, [doc_title(corpus.doc(c.doc)) for c in corpus.chunks])

    def run(self, name: str, query: str) -> tuple[list[Hit], dict[str, float]]:
        """The top hits for query and the measured milliseconds of each stage."""
        t0 = time.perf_counter()
        if name == "bm25":
            hits = self.bm25.search(query, TOP_K)
            return hits, {"retrieval": _ms(t0)}
        if name == "tfidf_char":
            hits = self.tfidf.search(query, TOP_K)
            return hits, {"retrieval": _ms(t0)}
        fused = rrf(
            [self.bm25.search(query, PREFETCH), self.tfidf.search(query, PREFETCH)], RRF_K, PREFETCH
        )
        retrieval = _ms(t0)
        t1 = time.perf_counter()
        hits = self.reranker.rerank(query, fused, TOP_K)
        return hits, {"retrieval": retrieval, "rerank": _ms(t1)}


def _ms(t0: float) -> float:
    return (time.perf_counter() - t0) * 1000.0


def simulate_answer(q: GoldQuery, retrieved: set[str], rng: random.Random) -> str:
    """A generated answer: right far more often when the evidence was retrieved."""
    if not q.answerable:
        # a model tempted by a near-duplicate answers instead of abstaining
        return rng.choice(q.correct_answers) if rng.random() < 0.7 else rng.choice(q.wrong_answers)
    found = [1.0 if n.full & retrieved else 0.5 if n.part & retrieved else 0.0 for n in q.needs]
    coverage = sum(found) / len(found) if found else 0.0
    if rng.random() < 0.08 + 0.82 * coverage:
        return rng.choice(q.correct_answers)
    if coverage < 0.5 and rng.random() < 0.5:
        return ABSTAIN
    return rng.choice(q.wrong_answers)


def simulate_generation_ms(prompt_tokens: int, completion_tokens: int, rng: random.Random) -> float:
    """Simulated LLM latency: time to first token (grows with the prompt) plus decoding."""
    ttft = (180.0 + 0.06 * prompt_tokens) * rng.lognormvariate(0.0, 0.25)
    decode = completion_tokens * rng.uniform(9.0, 16.0)
    slow = rng.uniform(2.0, 4.0) if rng.random() < 0.03 else 1.0  # a provider hiccup now and then
    return (ttft + decode) * slow


def build_queries(
    name: str,
    pipes: Pipelines,
    questions: list[GoldQuery],
    seed: int,
    progress: Callable[[str], None] | None = None,
) -> Iterator[Query]:
    """The run's query records, one per question, computed as they are written."""
    for n, q in enumerate(questions, 1):
        hits, latency = pipes.run(name, q.text)
        chunks = tuple(
            Chunk(doc_id=pipes.chunks[i].chunk_id, text=pipes.chunks[i].text, score=round(s, 4))
            for i, s in hits
        )
        rng = random.Random(f"demo-answer:{seed}:{name}:{q.query_id}")
        answer = simulate_answer(q, {c.doc_id for c in chunks}, rng)
        prompt = (
            PROMPT_OVERHEAD_TOKENS
            + math.ceil(len(q.text) / 4)
            + sum(math.ceil(len(c.text or "") / 4) for c in chunks)
        )
        completion = math.ceil(len(answer) / 4) + rng.randint(0, 6)
        latency["generation"] = simulate_generation_ms(prompt, completion, rng)
        latency["total"] = sum(latency.values())
        tags = {
            "query_type": q.query_type,
            "source": q.source,
            "product": q.product,
            "evidence": q.evidence_form,
            "near_duplicate": "yes" if q.near_duplicate else "no",
        }
        if q.wording is not None:
            tags["wording"] = q.wording
        yield Query(
            query_id=q.query_id,
            query=q.text,
            retrieved=chunks,
            relevance=dict(q.relevance),
            evidence=q.evidence,
            answer=answer,
            reference_answer=q.reference_answer,
            latency_ms={k: round(v, 3) for k, v in latency.items()},
            tokens={"prompt": prompt, "completion": completion},
            tags=tags,
        )
        if progress is not None and n % 100 == 0:
            progress(f"  {name}: {n}/{len(questions)} queries")


def write_runs(
    corpus: Corpus,
    questions: list[GoldQuery],
    out_dir: Path,
    seed: int,
    progress: Callable[[str], None] | None = None,
) -> list[Path]:
    """Index the corpus, run the three pipelines and write out_dir/<name>.jsonl for each."""
    pipes = Pipelines(corpus)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for spec in SPECS:
        info = RunInfo(
            name=spec.name,
            created_at=spec.created_at,
            description=spec.description + " Generation (answers, completion tokens and its "
            "latency) is simulated; retrieval and rerank latencies are measured.",
            settings={
                **spec.settings,
                "model": MODEL,
                "chunk_chars": MAX_CHUNK_CHARS,
                "chunk_overlap_chars": OVERLAP_CHARS,
                "n_chunks": len(corpus.chunks),
                "n_documents": len(corpus.documents),
                "demo_seed": seed,
            },
            price_prompt_per_1k=PRICES_PER_1K["prompt"],
            price_completion_per_1k=PRICES_PER_1K["completion"],
        )
        path = out_dir / f"{spec.name}.jsonl"
        write_native(info, build_queries(spec.name, pipes, questions, seed, progress), path)
        if progress is not None:
            progress(f"wrote {path}")
        paths.append(path)
    return paths
