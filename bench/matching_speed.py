"""Scenario 3: evidence matching, rageval's `partial` scorer (all cores) against difflib.

The pairs and the difflib loop come from bench/bench_matching.py (build_pairs and
difflib_per_pair): spans cut from standard-library docstrings, some paraphrased, each paired
with the 20 chunks its query retrieved. When that module no longer offers those functions,
the script is run as a subprocess and its printed output is shown instead.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import ScenarioResult, Table, fmt_ratio, fmt_seconds, measure
from rageval_core.matching.scorers import normalise_many, score_pairs

#: partial (all cores) must be at least this many times faster per pair than difflib
TARGET_RATIO = 20.0
SCRIPT = Path(__file__).with_name("bench_matching.py")


def run(
    n_queries: int = 334, difflib_sample: int = 3000, repeats: int = 3, seed: int = 0
) -> ScenarioResult:
    """Seconds per pair of partial (all cores, and one) and of difflib on the same pairs."""
    try:
        from bench import bench_matching as bm

        build_pairs, difflib_per_pair = bm.build_pairs, bm.difflib_per_pair
    except (ImportError, AttributeError) as e:
        return run_script(n_queries, repeats, reason=f"{type(e).__name__}: {e}")

    data: dict[str, Any] = build_pairs(n_queries, seed)
    evidence, chunks = data["evidence"], data["chunks"]
    pe, pc = np.asarray(data["pair_ev"]), np.asarray(data["pair_ch"])
    n = int(pe.size)
    cpus = os.cpu_count() or 1
    # difflib gets the strings partial sees after normalisation, as bench_matching does
    ev_norm = [t for t, _ in normalise_many([evidence[i] for i in pe.tolist()])]
    ch_norm = [t for t, _ in normalise_many([chunks[i] for i in pc.tolist()])]
    score_pairs(evidence[:5], chunks[:5], [0], [0])  # builds the character tables once

    rng = np.random.default_rng(seed + 1)
    rows = []
    results: dict[str, Any] = {}
    subsets = (
        ("retrieval mix (all pairs)", np.arange(n)),
        ("span vs its gold chunk only", np.asarray(data["matched"])),
    )
    for label, subset in subsets:
        if subset.size == 0:
            continue
        sample = (
            subset
            if subset.size <= difflib_sample
            else rng.choice(subset, difflib_sample, replace=False)
        )
        difflib_pair = float(difflib_per_pair(ev_norm, ch_norm, sample, repeats))
        sub_pe, sub_pc = pe[subset], pc[subset]
        timings = {}
        for workers in (0, 1):
            t, _ = measure(
                lambda w=workers, a=sub_pe, b=sub_pc: score_pairs(  # type: ignore[misc]
                    evidence, chunks, a, b, scorer="partial", workers=w
                ),
                repeats,
            )
            timings[workers] = t.median / subset.size
        ratio = difflib_pair / timings[0]
        results[label] = {
            "pairs": int(subset.size),
            "difflib_sample": int(sample.size),
            "difflib_s_per_pair": difflib_pair,
            "partial_all_cores_s_per_pair": timings[0],
            "partial_one_core_s_per_pair": timings[1],
            "ratio_all_cores": ratio,
            "ratio_one_core": difflib_pair / timings[1],
        }
        rows.append(
            (
                label,
                f"{subset.size:,}",
                f"{fmt_seconds(difflib_pair)} ({sample.size:,} timed)",
                fmt_seconds(timings[1]),
                fmt_seconds(timings[0]),
                fmt_ratio(difflib_pair / timings[1]),
                fmt_ratio(ratio),
                "met" if ratio >= TARGET_RATIO else "MISSED",
            )
        )
    table = Table(
        (
            "pairs",
            "n",
            "difflib per pair",
            "partial, 1 core",
            f"partial, all {cpus} cores",
            "speed-up, 1 core",
            "speed-up, all cores",
            "20x target",
        ),
        tuple(rows),
    )
    headline = results["retrieval mix (all pairs)"]
    return ScenarioResult(
        key="matching",
        title="3. Evidence matching: partial vs difflib",
        setup=(
            f"{n:,} (span, chunk) pairs from bench/bench_matching.py: {n_queries} queries x 20 "
            f"chunks of 500 characters x 3 gold spans ({data['kinds']['exact']} verbatim, "
            f"{data['kinds']['paraphrased']} paraphrased), seed {seed}. difflib is "
            "SequenceMatcher(None, span, chunk).ratio() in a loop on the normalised strings "
            "(on a sample, scaled per pair); partial is score_pairs(scorer='partial'), "
            f"normalisation included. Medians of {repeats} repeats."
        ),
        tables=(("Seconds per pair and speed-up over difflib:", table),),
        notes=(
            f"partial on all {cpus} cores is {fmt_ratio(headline['ratio_all_cores'])} faster "
            f"than difflib on the retrieval mix: the 20x target is "
            f"{'met' if headline['ratio_all_cores'] >= TARGET_RATIO else 'MISSED'}.",
        ),
        data={
            "cpus": cpus,
            "target_ratio": TARGET_RATIO,
            "subsets": results,
            "ratio_all_cores": headline["ratio_all_cores"],
            "source": "functions",
        },
    )


def run_script(n_queries: int, repeats: int, reason: str) -> ScenarioResult:
    """Fallback: run bench_matching.py as a script and show what it prints."""
    proc = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--queries",
            str(n_queries),
            "--repeats",
            str(repeats),
            "--metric-queries",
            "1000",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    output = proc.stdout + (f"\n[stderr]\n{proc.stderr}" if proc.returncode else "")
    found = re.search(r"retrieval mix \(all pairs\): ([0-9.]+)x", proc.stdout)
    ratio = float(found[1]) if found else float("nan")
    return ScenarioResult(
        key="matching",
        title="3. Evidence matching: partial vs difflib",
        setup=f"bench/bench_matching.py run as a script ({reason}).",
        tables=(),
        notes=(
            f"ratio difflib / partial (all cores), retrieval mix: {ratio:.1f}x against the "
            f"{TARGET_RATIO:.0f}x target.",
        ),
        data={
            "cpus": os.cpu_count() or 1,
            "target_ratio": TARGET_RATIO,
            "subsets": {},
            "ratio_all_cores": ratio,
            "source": "script",
        },
        raw_output=output,
    )
