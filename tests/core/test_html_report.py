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
        assert f'data-value="{test["candidate_mean"]!r}"' in html, row["metric"]
        assert f'data-value="{test["baseline_mean"]!r}"' in html, row["metric"]
    assert "Comparison" in page.text
    assert "Curves over k" in page.text and "Curves over the coverage threshold" in page.text
    assert html.count("<svg") >= 8  # a chart per curve metric


class Rows(HTMLParser):
    """The rows of the comparison table: each cell's text, class and data-value."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: list[list[dict[str, str]]] = []
        self.inside = False
        self.cell: dict[str, str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "table":
            self.inside = a.get("class") == "comparison"
        elif self.inside and tag == "tr":
            self.rows.append([])
        elif self.inside and tag == "td":
            self.cell = {"class": a.get("class", ""), "value": a.get("data-value", ""), "text": ""}
            self.rows[-1].append(self.cell)

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self.inside = False

    def handle_data(self, data: str) -> None:
        if self.inside and self.cell is not None:
            self.cell["text"] += data


def test_comparison_rows_are_paired_and_coloured_by_direction(
    two_runs: tuple[Path, Path],
) -> None:
    """Each row: the pairs' n, both means over them, the diff; a significant regression red
    (ContextRelevance fell: it was green), a significant fall of BestRank green; the queries
    scored in one run only said under the table."""
    db, out = two_runs
    compared = json.loads(
        rageval("compare", "bm25", "hybrid_rerank", "--k", "5", "--json", db=db).stdout
    )
    parser = Rows()
    parser.feed(out.read_text(encoding="utf-8"))
    rows = {r[0]["text"].split(" (")[0]: r for r in parser.rows if r and r[0]["text"]}
    verdicts = {}
    for m in compared["metrics"]:
        vs = m["vs_baseline"]["hybrid_rerank"]
        cells = rows[m["metric"]]
        assert cells[1]["text"] == "hybrid_rerank"
        assert int(cells[2]["value"]) == vs["n"]
        assert float(cells[3]["value"]) == vs["baseline_mean"], m["metric"]
        assert float(cells[4]["value"]) == vs["candidate_mean"], m["metric"]
        assert float(cells[5]["value"]) == vs["diff"]
        # the colour and the word, read in the metric's direction (by hand: lower is better
        # for BestRank and HallucinationRate only)
        lower = m["metric"].split("@")[0] in ("BestRank", "HallucinationRate")
        better = vs["diff"] < 0 if lower else vs["diff"] > 0
        want = ("improved" if better else "regressed") if vs["significant"] else ""
        assert cells[5]["class"] == want and cells[6]["text"] == want, m["metric"]
        assert ("(lower is better)" in cells[0]["text"]) == lower
        verdicts[m["metric"]] = want
    assert verdicts["ContextRelevance"] == "regressed"
    assert "improved" in verdicts.values() and "" in verdicts.values()
    rank = next(m for m in compared["metrics"] if m["metric"].startswith("BestRank"))
    vs = rank["vs_baseline"]["hybrid_rerank"]
    assert vs["n"] < vs["n_scored"]["baseline"]
    text = out.read_text(encoding="utf-8")
    assert (
        f"{rank['metric']}, hybrid_rerank: bm25 scores {vs['n_scored']['baseline']} of the "
        f"shared queries, hybrid_rerank {vs['n_scored']['candidate']}; the {vs['n']} both "
        "score are compared"
    ) in text


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


def test_a_preset_report_reads_its_lower_is_better_name(
    two_runs: tuple[Path, Path], tmp_path: Path
) -> None:
    """A preset's own names have a direction too (main stopped: unknown measure 'recall_score');
    best_match_position's best value is its lowest."""
    db, _ = two_runs
    out = tmp_path / "preset.html"
    fast = ("--permutations", "1000", "--bootstrap", "100")
    made = rageval(
        "report", "bm25", "hybrid_rerank", "--preset", "eggai", *fast, "--out", str(out), db=db
    )
    assert made.returncode == 0, made.stderr
    cells = [c for c in parse(out).cells() if c.get("data-metric") == "best_match_position"]
    values = {c["data-run"]: float(c["data-value"] or "nan") for c in cells}
    assert len(values) == 2 and values["0"] != values["1"]
    best = [c["data-run"] for c in cells if c.get("class") == "best"]
    assert best == [min(values, key=values.__getitem__)]
    assert "best_match_position (lower is better)" in out.read_text(encoding="utf-8")
