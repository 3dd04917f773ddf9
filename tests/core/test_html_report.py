"""`rageval report`: one self-contained HTML file whose numbers are evaluate's and compare's.

The file is parsed (html.parser): no script, no event handler, no src or href at all (nothing
to fetch), user text escaped; every metric cell's exact value (data-value) equals
`rageval evaluate --json`, the comparison's deltas and p-values equal `rageval compare --json`,
and the latency percentiles equal the report's ops. tests/e2e/test_report_offline.py opens it in
a browser with the network off.
"""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.cli import rageval
from tests.paths import REPO

SAMPLES = [REPO / "sample_runs" / f"{n}.jsonl" for n in ("bm25", "hybrid_rerank")]
HOSTILE = REPO / "tests" / "data" / "xss" / "hostile.jsonl"


class Page(HTMLParser):
    """Every start tag with its attributes, the text, and the cells that carry a data-value."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def cells(self) -> list[dict[str, str | None]]:
        return [a for t, a in self.tags if t == "td" and a.get("data-value") is not None]


def parse(path: Path) -> Page:
    page = Page()
    page.feed(path.read_text(encoding="utf-8"))
    page.close()
    return page


def assert_self_contained(page: Page) -> None:
    tags = {t for t, _ in page.tags}
    assert "script" not in tags and "link" not in tags and "img" not in tags
    assert "iframe" not in tags and "object" not in tags and "embed" not in tags
    for tag, attrs in page.tags:
        for name, value in attrs.items():
            assert not name.startswith("on"), (tag, name)
            assert name not in ("src", "href", "srcset", "action", "xlink:href"), (tag, name)
            assert "http:" not in (value or "") and "https:" not in (value or ""), (tag, name)
            assert "javascript:" not in (value or "").lower(), (tag, name)
    csp = [a for t, a in page.tags if t == "meta" and a.get("http-equiv")]
    assert csp and "default-src 'none'" in (csp[0].get("content") or "")


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("report")
    db = folder / "s.duckdb"
    assert rageval("import", *map(str, SAMPLES), db=db).returncode == 0
    out = folder / "report.html"
    made = rageval("report", "bm25", "hybrid_rerank", "--out", str(out), "--k", "5", db=db)
    assert made.returncode == 0, made.stderr
    return db, out


def test_numbers_equal_evaluate_and_compare(two_runs: tuple[Path, Path]) -> None:
    db, out = two_runs
    page = parse(out)
    assert_self_contained(page)
    cells = page.cells()
    for i, run in enumerate(("bm25", "hybrid_rerank")):
        printed = rageval("evaluate", run, "--k", "5", "--json", db=db)
        expected = json.loads(printed.stdout)
        shown = {
            c["data-metric"]: c["data-value"]
            for c in cells
            if c.get("data-run") == str(i) and c.get("data-metric")
        }
        assert set(shown) == set(expected["metrics"])
        for name, value in expected["metrics"].items():
            if value is None:
                assert shown[name] == ""
            else:
                assert float(shown[name] or "nan") == value, (run, name)
        # latency percentiles, as evaluate's ops give them, at about 3 significant digits
        # (a sub-millisecond retrieval shows 3 decimals, not 0.1)
        for stage, stats in expected["ops"]["latency_ms"].items():
            for p in ("p50", "p99"):
                decimals = 1 if stats[p] >= 10 else 2 if stats[p] >= 1 else 3
                assert f"{stats[p]:.{decimals}f}" in page.text, (run, stage)

    compared = json.loads(
        rageval("compare", "bm25", "hybrid_rerank", "--k", "5", "--json", db=db).stdout
    )
    html = out.read_text(encoding="utf-8")
    assert len(compared["metrics"]) == len(expected["metrics"])
    for row in compared["metrics"]:
        test = row["vs_baseline"]["hybrid_rerank"]
        assert f'data-value="{test["diff"]!r}"' in html, row["metric"]
        assert f'data-value="{row["means"]["hybrid_rerank"]!r}"' in html, row["metric"]
    assert "Comparison" in page.text
    assert "Curves over k" in page.text and "Curves over the coverage threshold" in page.text
    assert html.count("<svg") >= 8  # a chart per curve metric


def test_hostile_text_is_escaped(tmp_path: Path) -> None:
    out = tmp_path / "hostile.html"
    made = rageval("report", str(HOSTILE), "--out", str(out))
    assert made.returncode == 0, made.stderr
    page = parse(out)
    assert_self_contained(page)
    text = "".join(page.text)
    assert "<script>window.__xss=1</script>" in text  # shown as text, not run
    assert "&lt;script&gt;" in out.read_text(encoding="utf-8")


def test_bad_input_exits_2(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    missing = rageval("report", "no-such-run", "--out", str(tmp_path / "r.html"), db=db)
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    assert not (tmp_path / "r.html").exists()
