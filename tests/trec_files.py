"""A random TREC run and qrels file pair for tests that compare routes on the same labels."""

from __future__ import annotations

import random
from pathlib import Path


def write_run_and_qrels(
    folder: Path, *, seed: int, queries: int, judged: int, docs: int, depth: int, per_query: int
) -> tuple[Path, Path]:
    """bm25.trec: queries q0.. each ranking depth of d0..d{docs-1}; bm25.qrels: per_query grades
    0/1/2 for each of the first judged queries. One seeded generator: the same seed, the same files."""
    rnd = random.Random(seed)
    run, qrels = folder / "bm25.trec", folder / "bm25.qrels"
    with run.open("w") as fh:
        for q in range(queries):
            for r, d in enumerate(rnd.sample(range(docs), depth)):
                fh.write(f"q{q} Q0 d{d} {r + 1} {20 - r}.5 bm25\n")
    with qrels.open("w") as fh:
        for q in range(judged):
            for d in rnd.sample(range(docs), per_query):
                fh.write(f"q{q} 0 d{d} {rnd.choice([0, 1, 2])}\n")
    return run, qrels
