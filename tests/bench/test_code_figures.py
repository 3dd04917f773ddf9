"""Timings live in docs/benchmarks.md, not in the code's comments (issue 29, point 4: a figure in a
comment goes stale unseen). The page's "Figures behind the code" comes from bench/report.py, so a
full `make bench` writes it again."""

from __future__ import annotations

import io
import re
import tokenize

from bench.report import CODE_FIGURES
from tests.paths import REPO

#: a duration or a speed-up quoted as a measurement: "~0.3 s", "6 ms", "40 us", "~30x faster"
#: (not "0 ms": a stage a run lacks counts 0 ms, a value, not a timing)
TIMING = re.compile(
    r"(?:~|about |took |takes )\d[\d.,]*\s?(?:s|ms|us|µs|x)\b|\b(?!0 )\d[\d.,]*\s?(?:ms|us|µs)\b"
    r"|\b\d+(?:\.\d+)?x (?:faster|slower)|times (?:faster|slower)"
)


def comments_and_docstrings(text: str) -> list[tuple[int, str]]:
    """(line, text) of every comment and every string standing as a statement (docstrings)."""
    out = []
    previous = tokenize.NEWLINE
    statement_start = (tokenize.NEWLINE, tokenize.INDENT, tokenize.NL)
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        docstring = tok.type == tokenize.STRING and previous in statement_start
        if tok.type == tokenize.COMMENT or docstring:
            out.append((tok.start[0], tok.string))
        if tok.type != tokenize.COMMENT:
            previous = tok.type
    return out


def test_the_page_keeps_the_figures_the_code_points_to() -> None:
    page = (REPO / "docs/benchmarks.md").read_text(encoding="utf-8")
    assert page.rstrip().endswith(CODE_FIGURES.rstrip())
    pointed = [
        path.relative_to(REPO / "rageval_core").as_posix()
        for path in sorted((REPO / "rageval_core").rglob("*.py"))
        if "docs/benchmarks.md" in path.read_text(encoding="utf-8")
    ]
    for module in pointed:  # every module that points there has a row
        assert f"`{module}" in CODE_FIGURES or f"`{module.split('/')[0]}" in CODE_FIGURES, module


def test_no_comment_in_the_core_quotes_a_timing() -> None:
    found = [
        f"{path.relative_to(REPO)}:{line}: {m.group(0)!r}"
        for path in sorted((REPO / "rageval_core").rglob("*.py"))
        for line, text in comments_and_docstrings(path.read_text(encoding="utf-8"))
        for m in TIMING.finditer(text)
    ]
    assert found == []
