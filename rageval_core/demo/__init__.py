"""`rageval demo`: three sample runs over a synthetic policy and 10-K collection, built here.

corpus.py plans the collection and chunks it, documents.py writes each document from its
template; questions.py derives questions with known evidence and graded relevance from the facts
placed in them; retrievers.py holds the real BM25, character TF-IDF and hybrid + rerank
retrievers; runs.py runs them and writes the native JSONL files (generation is simulated, see
runs.py). The text (names, document templates, question wording) is data, in data/*.json.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rageval_core.demo.corpus import Corpus, build_corpus
from rageval_core.demo.questions import GoldQuery, build_questions
from rageval_core.demo.runs import SPECS, write_runs
from rageval_core.errors import UsageError

__all__ = [
    "MAX_QUERIES",
    "SPECS",
    "Corpus",
    "GoldQuery",
    "build_corpus",
    "build_questions",
    "generate",
]

#: the most questions `rageval demo --queries` gives (seeds 0-3, 7, 11, 42 give 8,000 and more)
MAX_QUERIES = 5_000


def generate(
    out_dir: Path,
    n_queries: int = 360,
    seed: int = 7,
    progress: Callable[[str], None] | None = None,
) -> list[Path]:
    """Write bm25.jsonl, tfidf_char.jsonl and hybrid_rerank.jsonl to out_dir; returns their paths.

    Everything is deterministic for a seed except the measured retrieval and rerank latencies.
    At most MAX_QUERIES (the collection's questions run out not far above it): asking for more
    is a UsageError before anything is written.
    """
    if not 1 <= n_queries <= MAX_QUERIES:
        raise UsageError(
            f"--queries {n_queries}: the demo collection gives 1 to {MAX_QUERIES:,} "
            "distinct questions per run; nothing was written"
        )
    say = progress or (lambda _msg: None)
    corpus = build_corpus(seed)
    say(f"corpus: {len(corpus.documents)} documents, {len(corpus.chunks)} chunks")
    questions = build_questions(corpus, n_queries, seed)
    if len(questions) < n_queries:  # (not seen for any seed tried: 8,000 fit for each of them)
        raise UsageError(
            f"--queries {n_queries}: the demo collection gives only "
            f"{len(questions):,} distinct questions for seed {seed}; nothing was written"
        )
    say(f"questions: {len(questions)}")
    return write_runs(corpus, questions, Path(out_dir), seed, progress)
