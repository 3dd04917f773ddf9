"""A comparison as a Markdown or LaTeX table, for papers and pull requests (as ranx's Report).

One row per run (baseline first), one column per metric: the mean over the shared queries, the
best run's value in bold, and a superscript letter after a candidate's value for each run it is
significantly better than. The runs are lettered a, b, c ... in row order; significance is the
comparison's own test (paired permutation test, Holm-corrected over every candidate and metric,
at its alpha) and is only known against the baseline, so only the baseline's letter (a) appears.
A metric where lower is better is marked with a down arrow and its best value is the lowest.
"""

from __future__ import annotations

import math
from typing import Any

from rageval_core.metrics.registry import IMPROVED, higher_is_better

FORMATS = ("markdown", "latex")
_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def latex_escape(text: str) -> str:
    """text with LaTeX's special characters written as literals."""
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in text)


def markdown_escape(text: str) -> str:
    """text safe inside a Markdown table cell: pipes, backslashes and emphasis marks escaped."""
    out = []
    for ch in text.replace("\r", " ").replace("\n", " "):
        out.append("\\" + ch if ch in "\\|*_`<>[]" else ch)
    return "".join(out)


def _cells(c: Any, digits: int) -> tuple[list[str], list[list[tuple[str, bool, str]]]]:
    """The run names and, per run and metric, (value text, is best, superscript letters)."""
    runs = [c.baseline, *c.candidates]
    rows: list[list[tuple[str, bool, str]]] = []
    best: dict[str, float] = {}
    for m in c.metrics:
        values = [c.means[r][m] for r in runs if not math.isnan(c.means[r][m])]
        if values:
            best[m] = max(values) if higher_is_better(m) else min(values)
    for r in runs:
        row = []
        for m in c.metrics:
            value = c.means[r][m]
            text = "-" if math.isnan(value) else f"{value:.{digits}f}"
            is_best = m in best and not math.isnan(value) and value == best[m]
            improved = r != c.baseline and c.test(r, m).verdict(c.options.alpha) == IMPROVED
            marks = "a" if improved else ""
            row.append((text, is_best, marks))
        rows.append(row)
    return runs, rows


def _shared_note(c: Any) -> str:
    """The queries each run is compared on (runs by letter: the note needs no escaping)."""
    pairs = c.alignment.pairs
    if c.alignment.same_queries:
        return f"{pairs[0].n_shared} shared queries."
    letters = "abcdefghijklmnopqrstuvwxyz"
    each = ", ".join(f"{letters[1 + i]} {p.n_shared}" for i, p in enumerate(pairs))
    return f"queries shared with a: {each}."


def comparison_table(c: Any, fmt: str = "markdown", digits: int = 4) -> str:
    """The comparison c (rageval_core.compare.Comparison) as a Markdown or LaTeX table."""
    if fmt not in FORMATS:
        raise ValueError(f"table format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    runs, rows = _cells(c, digits)
    letters = "abcdefghijklmnopqrstuvwxyz"
    heads = [m if higher_is_better(m) else f"{m} ↓" for m in c.metrics]
    note = (
        f"Superscript a: significantly better than run a, the baseline (paired permutation "
        f"test, Holm-corrected, alpha {c.options.alpha:g}); best value in bold; " + _shared_note(c)
    )
    if fmt == "markdown":
        lines = [
            "| # | run | " + " | ".join(markdown_escape(h) for h in heads) + " |",
            "|---|---|" + "---:|" * len(heads),
        ]
        for i, (run, row) in enumerate(zip(runs, rows, strict=True)):
            cells = []
            for text, is_best, marks in row:
                cell = f"**{text}**" if is_best else text
                cells.append(cell + (f"<sup>{marks}</sup>" if marks else ""))
            lines.append(f"| {letters[i]} | {markdown_escape(run)} | " + " | ".join(cells) + " |")
        return "\n".join(lines) + "\n\n" + note + "\n"
    heads_tex = [
        latex_escape(m) + ("" if higher_is_better(m) else r" $\downarrow$") for m in c.metrics
    ]
    lines = [
        r"\begin{table}",
        r"\centering",
        r"\begin{tabular}{cl" + "r" * len(heads) + "}",
        r"\toprule",
        r"\# & Run & " + " & ".join(heads_tex) + r" \\",
        r"\midrule",
    ]
    for i, (run, row) in enumerate(zip(runs, rows, strict=True)):
        cells = []
        for text, is_best, marks in row:
            cell = rf"\textbf{{{text}}}" if is_best else text
            cells.append(cell + (f"$^{{{marks}}}$" if marks else ""))
        lines.append(f"{letters[i]} & {latex_escape(run)} & " + " & ".join(cells) + r" \\")
    lines += [
        r"\bottomrule",
        r"\end{tabular}",
        rf"\caption{{{latex_escape(note)}}}",
        r"\end{table}",
    ]
    return "\n".join(lines) + "\n"
