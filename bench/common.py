"""Timing, results and tables shared by the scenarios."""

from __future__ import annotations

import gc
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]

#: a measurement whose warm-up call takes longer than this is "slow": fewer repeats
SLOW_SECONDS = 1.0


@dataclass(frozen=True, slots=True)
class Timing:
    """Wall-clock seconds of each timed repeat, and the stage split of each (when measured)."""

    seconds: tuple[float, ...]
    stages: dict[str, tuple[float, ...]] = field(default_factory=dict)
    warmup_s: float | None = None  # the untimed first call (JIT, caches, page cache)

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    def stage_median(self, name: str) -> float:
        return statistics.median(self.stages[name])

    def to_json(self) -> dict[str, Any]:
        return {
            "median_s": self.median,
            "repeats": len(self.seconds),
            "seconds": list(self.seconds),
            "stages_median_s": {name: self.stage_median(name) for name in self.stages},
            "warmup_s": self.warmup_s,
        }


@dataclass(frozen=True, slots=True)
class Table:
    """A small table rendered the same way to stdout and to markdown."""

    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    text_columns: tuple[int, ...] = (0,)  # aligned left; every other column holds numbers

    def markdown(self) -> str:
        right = [i not in self.text_columns for i in range(len(self.headers))]
        widths = [
            max([len(h), *(len(r[i]) for r in self.rows)]) for i, h in enumerate(self.headers)
        ]

        def line(cells: Sequence[str]) -> str:
            padded = (
                c.rjust(w) if r else c.ljust(w)
                for c, w, r in zip(cells, widths, right, strict=True)
            )
            return "| " + " | ".join(padded) + " |"

        rule = (
            "|"
            + "|".join(
                ("-" * (w + 1) + ":") if r else ("-" * (w + 2))
                for w, r in zip(widths, right, strict=True)
            )
            + "|"
        )
        return "\n".join([line(self.headers), rule, *(line(r) for r in self.rows)])


@dataclass(frozen=True)
class ScenarioResult:
    """One scenario's outcome: what was run, its tables, notes, and machine-readable data."""

    key: str
    title: str
    setup: str
    tables: tuple[tuple[str, Table], ...]  # (caption, table)
    notes: tuple[str, ...]
    data: dict[str, Any]
    raw_output: str = ""  # printed output of a script run as a subprocess, shown verbatim

    def text(self) -> str:
        """The scenario as markdown (readable as plain text on stdout too)."""
        parts = [f"## {self.title}", "", self.setup, ""]
        for caption, table in self.tables:
            if caption:
                parts += [caption, ""]
            parts += [table.markdown(), ""]
        if self.raw_output:
            parts += ["```", self.raw_output.rstrip(), "```", ""]
        parts += [f"- {note}" for note in self.notes]
        return "\n".join(parts).rstrip() + "\n"


#: gc.collect() before each timed call (the tests turn it off: in a test process that has run
#: hundreds of tests a full collection costs up to a second, and their timings are never judged)
COLLECT_GARBAGE = True


def _collect() -> None:
    if COLLECT_GARBAGE:
        gc.collect()


def measure(
    fn: Callable[[], Any],
    repeats: int | None = None,
    *,
    fast_repeats: int = 5,
    slow_repeats: int = 3,
    warmup: bool = True,
) -> tuple[Timing, Any]:
    """Median-ready timings of fn() and the value of its warm-up call.

    fn may return (value, {stage: seconds}) to report a split of each call; anything else is
    taken as the value. Without an explicit repeats, a warm-up call slower than SLOW_SECONDS
    gets slow_repeats timed repeats, else fast_repeats. gc.collect() runs before each call so
    garbage of one call is not collected inside the next one's timing.
    """
    first_value: Any = None
    first_seconds = 0.0
    if warmup:
        _collect()
        start = time.perf_counter()
        first_value = fn()
        first_seconds = time.perf_counter() - start
    n = (
        repeats
        if repeats is not None
        else (slow_repeats if first_seconds > SLOW_SECONDS else fast_repeats)
    )
    seconds: list[float] = []
    stages: dict[str, list[float]] = {}
    for _ in range(n):
        _collect()
        start = time.perf_counter()
        value = fn()
        seconds.append(time.perf_counter() - start)
        if isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], dict):
            for name, s in value[1].items():
                stages.setdefault(name, []).append(s)
        if not warmup and first_value is None:
            first_value = value
    if (
        isinstance(first_value, tuple)
        and len(first_value) == 2
        and isinstance(first_value[1], dict)
    ):
        first_value = first_value[0]
    timing = Timing(
        tuple(seconds), {k: tuple(v) for k, v in stages.items()}, first_seconds if warmup else None
    )
    return timing, first_value


class Stopwatch:
    """Stage split inside one timed call: lap("parse") records the time since the last lap."""

    def __init__(self) -> None:
        self.stages: dict[str, float] = {}
        self._last = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.stages[name] = self.stages.get(name, 0.0) + now - self._last
        self._last = now


def fmt_seconds(seconds: float) -> str:
    """Seconds with a unit that keeps 3 significant digits readable (s, ms or us)."""
    if seconds >= 1.0:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds * 1e6:.1f} us"


def fmt_runs(timing: Timing) -> str:
    """How many timed runs and their range, so the spread (noise) is visible next to the median."""
    n = len(timing.seconds)
    if n == 1:
        return "1"
    return f"{n} ({fmt_seconds(min(timing.seconds))} - {fmt_seconds(max(timing.seconds))})"


def fmt_ratio(ratio: float) -> str:
    return f"{ratio:.2f}x" if ratio < 10 else f"{ratio:.1f}x"


def run_child(module: str, args: Sequence[str], db: Path, what: str) -> Any:
    """`python -m MODULE --child ARGS...` in a fresh interpreter with RAGEVAL_DB=db (a child that
    starts its own server or browser, or must not share this process's caches): the JSON of the
    last `RESULT ` line it printed. RuntimeError naming what, with the child's stderr, when it
    failed or printed none."""
    done = subprocess.run(
        [sys.executable, "-m", module, "--child", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "RAGEVAL_DB": str(db)},
        check=False,
    )
    lines = [x for x in done.stdout.splitlines() if x.startswith("RESULT ")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"the {what} child failed ({done.returncode}): {done.stderr[-3000:]}")
    return json.loads(lines[-1][len("RESULT ") :])
