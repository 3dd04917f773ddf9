"""Speed of evidence matching (partial vs difflib) and of the k / threshold recompute.

Run: .venv/bin/python bench/bench_matching.py [--queries 334] [--repeats 3]

Pairs are built like a retrieval evaluation: each query has 3 gold spans (60-200 characters,
cut from its gold chunk, some verbatim, some paraphrased) and 20 retrieved 500-character
chunks, the gold chunk among them for 80% of the queries; every span is paired with every
chunk (334 queries -> ~20,000 pairs, most of them span vs an unrelated chunk). The text is
English prose with its original line breaks and indentation: the docstrings of the standard
library. The same pairs are timed with rageval's `partial` scorer (all cores) and with the
loop teams' scripts run: difflib.SequenceMatcher(None, evidence, chunk).ratio() on the same
normalised strings (on a sample, scaled per pair, when there are many).
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import os
import random
import statistics
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from rageval_core.matching.scorers import normalise_many, score_pairs
from rageval_core.metrics import evidence as ev

MODULES = [
    "argparse",
    "asyncio",
    "collections",
    "contextlib",
    "csv",
    "dataclasses",
    "datetime",
    "decimal",
    "email",
    "enum",
    "fractions",
    "functools",
    "http.client",
    "inspect",
    "io",
    "itertools",
    "json",
    "logging",
    "os",
    "pathlib",
    "pickle",
    "random",
    "re",
    "shutil",
    "socket",
    "sqlite3",
    "ssl",
    "statistics",
    "string",
    "subprocess",
    "tarfile",
    "tempfile",
    "textwrap",
    "threading",
    "unittest",
    "urllib.request",
    "zipfile",
]


def corpus_chunks(size: int = 500) -> list[str]:
    """500-character chunks of standard-library docstrings (real prose, raw whitespace)."""
    docs: dict[str, None] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in MODULES:
            module = importlib.import_module(name)
            for attr in dir(module):
                doc = getattr(getattr(module, attr, None), "__doc__", None)
                if isinstance(doc, str) and len(doc) > 200:
                    docs.setdefault(doc)
    text = "\n\n".join(docs)
    return [text[i : i + size] for i in range(0, len(text) - size, size)]


def paraphrase(span: str, rng: random.Random, vocabulary: list[str]) -> str:
    """Word-level edits a rewording makes: drops, substitutions, a swap, case and commas."""
    words = span.split()
    out: list[str] = []
    for word in words:
        roll = rng.random()
        if roll < 0.08:
            continue
        if roll < 0.18:
            out.append(rng.choice(vocabulary))
        else:
            out.append(word)
    if len(out) > 3:
        i = rng.randrange(len(out) - 1)
        out[i], out[i + 1] = out[i + 1], out[i]
    text = " ".join(out)
    return text.upper() if rng.random() < 0.1 else text.replace(",", "")


def build_pairs(n_queries: int, seed: int = 0) -> dict[str, Any]:
    rng = random.Random(seed)
    chunks = corpus_chunks()
    vocabulary = sorted({w for c in chunks[:200] for w in c.split() if w.isalpha()})
    evidence: list[str] = []
    retrieved: list[str] = []
    pair_ev: list[int] = []
    pair_ch: list[int] = []
    matched: list[int] = []  # pair indices of span vs its own gold chunk
    kinds = {"exact": 0, "paraphrased": 0}
    for _ in range(n_queries):
        gold = rng.randrange(len(chunks))
        spans = []
        for _ in range(3):
            length = rng.randint(60, 200)
            start = rng.randint(0, 500 - length)
            span = chunks[gold][start : start + length]
            if rng.random() < 0.5:
                kinds["exact"] += 1
            else:
                span = paraphrase(span, rng, vocabulary)
                kinds["paraphrased"] += 1
            spans.append(len(evidence))
            evidence.append(span)
        ranked = []
        for _ in range(20):  # half neighbours of the gold chunk (same topic), half anywhere
            near = gold + rng.randint(-15, 15)
            ranked.append(
                near
                if rng.random() < 0.5 and 0 <= near < len(chunks) and near != gold
                else rng.randrange(len(chunks))
            )
        if rng.random() < 0.8:
            ranked[rng.randrange(20)] = gold
        for c in ranked:
            chunk_index = len(retrieved)
            retrieved.append(chunks[c])
            for e in spans:
                if c == gold:
                    matched.append(len(pair_ev))
                pair_ev.append(e)
                pair_ch.append(chunk_index)
    return {
        "evidence": evidence,
        "chunks": retrieved,
        "pair_ev": np.array(pair_ev),
        "pair_ch": np.array(pair_ch),
        "matched": np.array(matched),
        "kinds": kinds,
    }


def median_time(fn: Callable[[], Any], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def difflib_per_pair(
    ev_norm: list[str], ch_norm: list[str], sample: np.ndarray, repeats: int
) -> float:
    """Seconds per pair of the scripts' loop over the sampled pairs (median of repeats)."""
    pairs = [(ev_norm[i], ch_norm[i]) for i in sample.tolist()]

    def loop() -> None:
        for e, c in pairs:
            difflib.SequenceMatcher(None, e, c).ratio()

    return median_time(loop, repeats) / len(pairs)


def bench_matching(args: argparse.Namespace) -> None:
    data = build_pairs(args.queries)
    evidence, chunks = data["evidence"], data["chunks"]
    pe, pc = data["pair_ev"], data["pair_ch"]
    n = pe.size
    cpus = os.cpu_count() or 1
    print(
        f"pairs: {n:,} ({args.queries} queries x 20 chunks x 3 spans; spans: "
        f"{data['kinds']['exact']} exact, {data['kinds']['paraphrased']} paraphrased; "
        f"{data['matched'].size} span-vs-gold-chunk pairs); CPUs: {cpus}"
    )
    ev_all = [t for t, _ in normalise_many([evidence[i] for i in pe.tolist()])]
    ch_all = [t for t, _ in normalise_many([chunks[i] for i in pc.tolist()])]
    substring = np.array([e in c for e, c in zip(ev_all, ch_all, strict=True)])
    print(f"exact substrings after normalisation: {substring.mean():.1%} of pairs")

    rng = np.random.default_rng(1)
    rows: list[tuple[str, float]] = []
    for label, subset in (
        ("retrieval mix (all pairs)", np.arange(n)),
        ("span vs its gold chunk only", data["matched"]),
    ):
        sample = (
            subset
            if subset.size <= args.difflib_sample
            else rng.choice(subset, args.difflib_sample, replace=False)
        )
        d = difflib_per_pair(ev_all, ch_all, sample, args.repeats)
        sub_pe, sub_pc = pe[subset], pc[subset]

        def partial(
            workers: int, min_align: float = 0.0, pe_: Any = sub_pe, pc_: Any = sub_pc
        ) -> Callable[[], Any]:
            return lambda: score_pairs(
                evidence,
                chunks,
                pe_,
                pc_,
                scorer="partial",
                workers=workers,
                min_align_score=min_align,
            )

        score_pairs(evidence[:5], chunks[:5], [0], [0])  # warm the character tables
        p_all = median_time(partial(0), args.repeats) / subset.size
        p_one = median_time(partial(1), args.repeats) / subset.size
        p_cut = median_time(partial(0, 0.7), args.repeats) / subset.size
        print(f"\n{label}: {subset.size:,} pairs (difflib on {sample.size:,}, scaled)")
        print(f"  difflib SequenceMatcher loop        {d * 1e6:9.1f} us/pair")
        print(
            f"  partial, workers=all ({cpus})          {p_all * 1e6:9.1f} us/pair"
            f"   {d / p_all:5.1f}x faster than difflib"
        )
        print(
            f"  partial, workers=1                  {p_one * 1e6:9.1f} us/pair   {d / p_one:5.1f}x"
        )
        print(
            f"  partial, all, min_align_score=0.7   {p_cut * 1e6:9.1f} us/pair   {d / p_cut:5.1f}x"
        )
        rows.append((label, d / p_all))
        if label.startswith("retrieval"):
            for scorer in ("ratio", "token_set", "levenshtein"):
                t = (
                    median_time(
                        lambda s=scorer, a=sub_pe, b=sub_pc: score_pairs(  # type: ignore[misc]
                            evidence, chunks, a, b, scorer=s
                        ),
                        args.repeats,
                    )
                    / subset.size
                )
                print(
                    f"  {scorer:<12} workers=all            {t * 1e6:9.1f} us/pair   {d / t:5.1f}x"
                )
    print(
        "\nratio difflib / partial (workers=all): "
        + "; ".join(f"{label}: {ratio:.1f}x" for label, ratio in rows)
    )


def bench_metrics(args: argparse.Namespace) -> None:
    rng = np.random.default_rng(0)
    nq, depth, width = args.metric_queries, 20, 3
    scores = rng.beta(2, 3, (nq, depth, width)).astype(np.float32)
    n_spans = rng.integers(0, width + 1, nq)
    n_ret = rng.integers(5, depth + 1, nq)
    retriever = rng.random((nq, depth))
    print(
        f"\nmetrics on a synthetic {nq:,} x {depth} x {width} score tensor "
        f"(median of {args.repeats} repeats)"
    )
    timings = {
        "prepare_coverage (once per run/scorer)": lambda: ev.prepare_coverage(
            scores, n_spans, n_ret
        ),
        "prepare_coverage with score_cut=0.3": lambda: ev.prepare_coverage(
            scores, n_spans, n_ret, retriever_scores=retriever, score_cut=0.3
        ),
    }
    for label, fn in timings.items():
        print(f"  {label:<48} {median_time(fn, args.repeats) * 1e3:8.1f} ms")
    cov = ev.prepare_coverage(scores, n_spans, n_ret)
    thresholds = iter(np.linspace(0.5, 0.9, 1000).tolist())  # a new threshold every call

    def all_k_new_threshold() -> None:
        t = next(thresholds)
        covered, total = ev.evidence_recall(cov, t)
        ev.pool_recall(covered, total)
        ev.per_query_coverage(cov, t)
        ev.full_coverage(cov, t)
        ev.best_rank(cov, t)

    ks = iter(range(1, 1000))
    sweep_k = iter(range(1, 21))
    checks = {
        "summarise 5 cut-offs, new threshold": lambda: ev.summarise(
            cov, ks=(1, 3, 5, 10, 20), threshold=next(thresholds)
        ),
        "summarise, new cut-off, same threshold": lambda: ev.summarise(
            cov, ks=(next(ks) % 20 + 1,)
        ),
        "per-query arrays at every k=1..20, new threshold": all_k_new_threshold,
        "covers() labels for the ranking metrics": lambda: ev.covers(cov, next(thresholds), 10),
        "threshold_sweep, 101 thresholds, new k (cold)": lambda: ev.threshold_sweep(
            cov, np.linspace(0, 1, 101), k=next(sweep_k)
        ),
        "threshold_sweep, 101 thresholds (cached k)": lambda: ev.threshold_sweep(
            cov, np.linspace(0, 1, 101), k=10
        ),
    }
    for label, fn in checks.items():
        fn()  # first call outside the timing (except the cold sweep, new k every call)
        print(f"  {label:<48} {median_time(fn, max(args.repeats, 5)) * 1e3:8.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=334, help="queries (x60 pairs)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--difflib-sample",
        type=int,
        default=3000,
        help="pairs difflib is timed on (scaled per pair)",
    )
    parser.add_argument("--metric-queries", type=int, default=100_000)
    parser.add_argument("--skip-matching", action="store_true")
    args = parser.parse_args()
    if not args.skip_matching:
        bench_matching(args)
    bench_metrics(args)


if __name__ == "__main__":
    main()
