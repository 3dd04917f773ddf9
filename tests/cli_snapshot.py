"""A fixed script of `rageval` calls whose every output is written down, to diff two trees.

`python -m tests.cli_snapshot OUTDIR` (`make cli-snapshot OUT=DIR`) runs the CALLS below, each in
its own process through the console script's entry point (`rageval_core.cli:entry`), in a fresh
temporary folder holding a store, and writes for each call `NN-name.out`, `NN-name.err` and
`NN-name.code` (stdout, stderr, exit code), plus the files a call wrote (`NN-name.file.*`).
Run it on two trees (before and after a restructure: `PYTHONPATH=TREE`, cwd TREE) and
`diff -r` the folders: an empty diff says the CLI prints the same bytes.

What is normalised, and nothing else (each is legitimately different between two runs):
- the temporary folder's path -> `<TMP>` and the tree's path -> `<REPO>`;
- date-times of today (UTC), i.e. stamped at run time (`imported`, a report's "made at") ->
  `<NOW>`; dates in the runs' own data are kept;
- the wall time of a step (`scored 4510 evidence x chunk pairs (partial) in 0.5 s`) -> `in <DURATION>`
  (a latency of the run's data is a number of the run, not of this machine, and is kept);
- the process id in an interrupted-work note -> `<PID>`;
- in the runs `rageval demo` writes, the latencies it measures (`retrieval`, `rerank` and so
  `total`: wall time of this machine's BM25/TF-IDF/rerank) -> `<MEASURED>`; its simulated
  `generation` latency is seeded and kept;
- a traceback's frames (file paths and line numbers of the code) -> `<FRAMES>`; its last line, the
  exception, is kept. A traceback is a bug either way (the house rule: never one), and its frames
  move with the code.
Written files get the same replacements when they are text (UTF-8); binary ones are copied as is.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path.cwd()

#: the console script, in a child process: `rageval ARGS` as an installed `rageval` runs it
_ENTRY = "import sys; sys.argv[0] = 'rageval'; from rageval_core.cli import entry; entry()"

COMMANDS = (
    "import", "runs", "show", "rename", "delete", "demo", "evaluate", "compare", "gate", "fuse",
    "report", "export", "judge", "calibrate", "attach", "dashboard", "diagnose",
    "agreement", "collect",
)  # fmt: skip

#: (name, argv) in order; `{tmp}` is the call's temporary folder (the store is `{tmp}/s.duckdb`)
CALLS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("help", ("--help",)),
    *((f"help-{c}", (c, "--help")) for c in COMMANDS),
    ("no-command", ()),
    ("unknown-command", ("nosuch",)),
    ("runs-empty", ("runs",)),
    ("runs-empty-json", ("runs", "--json")),
    ("import-samples", ("import", "sample_runs/bm25.jsonl", "sample_runs/tfidf_char.jsonl",
                        "sample_runs/hybrid_rerank.jsonl")),
    ("import-judged", ("import", "tests/data/judge/judged_run.jsonl")),
    ("import-table", ("import", "tests/data/good/table.csv", "--name", "table-run")),
    ("import-ragas", ("import", "tests/data/ragas/rows.jsonl", "--no-score")),
    ("import-bad-many", ("import", "tests/data/bad/native_many_errors.jsonl")),
    ("import-bad-binary", ("import", "tests/data/bad/binary.bin")),
    ("import-bad-table", ("import", "tests/data/bad/table_bad_rank.csv")),
    ("import-bad-trec", ("import", "tests/data/bad/trec_too_few_columns.run")),
    ("import-missing", ("import", "tests/data/nosuch.jsonl")),
    ("import-again", ("import", "sample_runs/bm25.jsonl")),
    ("runs", ("runs",)),
    ("runs-json", ("runs", "--json")),
    ("show", ("show", "bm25")),
    ("show-json", ("show", "hybrid_rerank", "--json")),
    ("show-missing", ("show", "nosuch")),
    ("evaluate", ("evaluate", "bm25")),
    ("evaluate-json", ("evaluate", "hybrid_rerank", "--json")),
    ("evaluate-metrics", ("evaluate", "tfidf_char", "--metrics", "P@5 nDCG@10 RR AP", "--k", "5")),
    ("evaluate-exact", ("evaluate", "bm25", "--scorer", "exact", "--relevance", "evidence")),
    ("evaluate-file", ("evaluate", "sample_runs/tfidf_char.jsonl", "--threshold", "0.6")),
    ("evaluate-judged", ("evaluate", "judged", "--json")),
    ("evaluate-bad-metric", ("evaluate", "bm25", "--metrics", "nDCG@x")),
    ("evaluate-bad-k", ("evaluate", "bm25", "--k", "abc")),
    ("evaluate-bad-scorer", ("evaluate", "bm25", "--scorer", "nosuch")),
    ("compare", ("compare", "bm25", "tfidf_char", "hybrid_rerank")),
    ("compare-json", ("compare", "bm25", "hybrid_rerank", "--json")),
    ("compare-metrics", ("compare", "bm25", "hybrid_rerank", "--metrics", "nDCG@10 R@10")),
    ("compare-one", ("compare", "bm25")),
    ("gate-pass", ("gate", "--baseline", "bm25", "--candidate", "hybrid_rerank",
                   "--max-drop", "nDCG@10=0.01,R@10=0.02")),
    ("gate-fail", ("gate", "--baseline", "hybrid_rerank", "--candidate", "tfidf_char",
                   "--max-drop", "nDCG@10=0.01,R@10=2%")),
    ("gate-bad-rule", ("gate", "--baseline", "bm25", "--candidate", "hybrid_rerank",
                       "--max-drop", "nDCG@10")),
    ("fuse-print", ("fuse", "bm25", "tfidf_char", "--method", "rrf")),
    ("fuse-out", ("fuse", "bm25", "tfidf_char", "--method", "combmnz", "--out", "{tmp}/fused.jsonl")),
    ("import-fused", ("import", "{tmp}/fused.jsonl")),
    ("report", ("report", "bm25", "hybrid_rerank", "--out", "{tmp}/report.html")),
    ("report-bad-out", ("report", "bm25", "--out", "{tmp}/no/such/dir/r.html")),
    ("export-jsonl", ("export", "bm25", "--to", "jsonl", "--out", "{tmp}/bm25.jsonl")),
    ("export-parquet", ("export", "tfidf_char", "--to", "parquet", "--out", "{tmp}/t.parquet")),
    ("export-bad-target", ("export", "bm25", "--to", "nosuch", "--out", "{tmp}/x")),
    ("diagnose", ("diagnose", "bm25")),
    ("diagnose-json", ("diagnose", "hybrid_rerank", "--json")),
    ("diagnose-missing", ("diagnose", "nosuch")),
    ("judge-dry-run", ("judge", "bm25", "--base-url", "http://127.0.0.1:9/v1", "--model", "m",
                       "--dry-run")),
    ("judge-dry-run-json", ("judge", "bm25", "--base-url", "http://127.0.0.1:9/v1", "--model",
                            "m", "--dry-run", "--json")),
    ("judge-bad-url", ("judge", "bm25", "--base-url", "http://[::1/v1", "--model", "m")),
    ("calibrate", ("calibrate", "judged")),
    ("calibrate-json", ("calibrate", "judged", "--json")),
    ("collect-dry-run", ("collect", "--questions", "tests/data/qa_pairs/pairs.jsonl",
                         "--endpoint", "http://127.0.0.1:9/search", "--grid", "top_k=1,5",
                         "--dry-run")),
    ("collect-bad-grid", ("collect", "--questions", "tests/data/qa_pairs/pairs.jsonl",
                          "--endpoint", "http://127.0.0.1:9/search", "--grid", "top_k")),
    ("agreement-none", ("agreement", "judged")),
    ("agreement-adjudicate", ("agreement", "judged", "--json", "--adjudicate", "q1", "d1", "2",
                              "--annotator", "dan")),
    ("attach", ("attach", "bm25", "--date", "2024-06-01", "--tag", "team=search",
                "--prompt-price", "0.001")),
    ("attach-bad-date", ("attach", "bm25", "--date", "yesterday")),
    ("show-attached", ("show", "bm25")),
    ("compare-by", ("compare", "bm25", "hybrid_rerank", "--by", "query_type")),
    ("compare-by-missing", ("compare", "bm25", "hybrid_rerank", "--by", "team")),
    ("rename", ("rename", "tfidf_char", "tfidf")),
    ("delete", ("delete", "tfidf")),
    ("delete-missing", ("delete", "tfidf")),
    ("runs-after", ("runs",)),
    ("db-is-folder", ("--db", "{tmp}", "runs")),
    ("db-not-duckdb", ("--db", "{repo}/sample_runs/README.md", "runs")),
    ("demo", ("demo", "--out", "{tmp}/demo", "--queries", "6", "--seed", "3")),
)  # fmt: skip

#: files a call writes, copied into OUTDIR after it (same bytes expected)
WRITTEN = {
    "fuse-out": "fused.jsonl",
    "report": "report.html",
    "export-jsonl": "bm25.jsonl",
    "export-parquet": "t.parquet",
    "demo": "demo",
}

_DURATION = re.compile(r"\bin \d+(?:\.\d+)? s\b")
_PID = re.compile(r"\(process \d+\)")
_FRAMES = re.compile(r"^Traceback \(most recent call last\):\n(?:[ \t].*\n)+", re.M)


def _now_pattern() -> re.Pattern[str]:
    """Today's date-times (UTC, and the day before: a run across midnight), to the minute or more."""
    days = {time.strftime("%Y-%m-%d", time.gmtime(time.time() - d)) for d in (0, 86400)}
    alternatives = "|".join(sorted(days))
    return re.compile(
        rf"(?:{alternatives})[T ]\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?: ?UTC|Z|[+-]\d\d:?\d\d)?"
    )


def normalise(text: str, tmp: Path) -> str:
    """text with only the legitimately variable parts replaced (see the module's docstring)."""
    text = text.replace(str(tmp.resolve()), "<TMP>").replace(str(tmp), "<TMP>")
    text = text.replace(str(REPO.resolve()), "<REPO>")
    text = _now_pattern().sub("<NOW>", text)
    text = _DURATION.sub("in <DURATION>", text)
    text = _PID.sub("(process <PID>)", text)
    text = _FRAMES.sub("Traceback <FRAMES>\n", text)
    return text


def run(outdir: Path) -> int:
    """Every call of CALLS, written to outdir; returns how many calls there were."""
    outdir.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGEVAL_")}
    env.update(COLUMNS="100", LC_ALL="C.UTF-8", TZ="UTC", NO_COLOR="1", PYTHONHASHSEED="0")
    with tempfile.TemporaryDirectory(prefix="rageval-snapshot-") as name:
        tmp = Path(name)
        for n, (label, argv) in enumerate(CALLS):
            args = [a.format(tmp=tmp, repo=REPO) for a in argv]
            if not args or args[0] != "--db":
                args = ["--db", str(tmp / "s.duckdb"), *args]
            done = subprocess.run(
                [sys.executable, "-c", _ENTRY, *args],
                capture_output=True,
                text=True,
                cwd=REPO,
                env=env,
                timeout=600,
            )
            stem = outdir / f"{n:02d}-{label}"
            Path(f"{stem}.out").write_text(normalise(done.stdout, tmp), encoding="utf-8")
            Path(f"{stem}.err").write_text(normalise(done.stderr, tmp), encoding="utf-8")
            Path(f"{stem}.code").write_text(f"{done.returncode}\n", encoding="utf-8")
            if label in WRITTEN:
                target = Path(f"{stem}.file.{WRITTEN[label]}")
                _copy_written(tmp / WRITTEN[label], target, tmp, measured=label == "demo")
    return len(CALLS)


_MEASURED = re.compile(r'("(?:retrieval|rerank|total)": )-?[0-9.e+-]+')


def _copy_written(source: Path, target: Path, tmp: Path, measured: bool = False) -> None:
    """A file (or a folder's files) a call wrote, text normalised as the outputs are; measured:
    the file holds latencies measured on this machine (the demo's runs)."""
    if source.is_dir():
        target.mkdir()
        for item in sorted(source.iterdir()):
            _copy_written(item, target / item.name, tmp, measured)
    elif source.exists():
        data = source.read_bytes()
        try:
            text = normalise(data.decode("utf-8"), tmp)
        except UnicodeDecodeError:
            target.write_bytes(data)
            return
        if measured:
            text = _MEASURED.sub(r"\1<MEASURED>", text)
        target.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m tests.cli_snapshot OUTDIR")
    print(f"{run(Path(sys.argv[1]))} calls written to {sys.argv[1]}")
