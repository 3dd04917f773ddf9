"""What the docs say of the code is what the code does: the metric kinds, export's targets."""

from __future__ import annotations

import re
from pathlib import Path

from rageval_core.metrics.registry import KINDS
from rageval_core.settings.presets import PRESET_METRICS
from rageval_core.outputs.report_text import metric_kind
from tests.cli import rageval
from tests.paths import REPO


def _table_rows(text: str, header: str) -> list[list[str]]:
    """The rows of the markdown table whose header line starts with header, cells stripped."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def test_the_kinds_table_lists_every_kind_with_metrics_of_that_kind() -> None:
    rows = _table_rows((REPO / "docs/metrics.md").read_text(), "| kind |")
    kinds = {row[0]: row for row in rows}
    # every kind a report can show beside a metric, the preset's own names included
    assert set(kinds) == {*KINDS.values(), "preset"}
    for kind, (_, _, names) in kinds.items():
        listed = [n for n in re.findall(r"`([^`]+)`", names) if "<" not in n]
        assert listed, f"kind {kind}: no metric listed ({names!r})"
        for name in listed:
            assert metric_kind(name.replace("@k", "@10")) == kind, (kind, name)
        if kind == "preset":
            assert set(listed) <= PRESET_METRICS


def test_export_names_no_default_target(tmp_path: Path) -> None:
    """`--to` is required: the table of targets calls none of them the default."""
    rows = _table_rows((REPO / "docs/outputs.md").read_text(), "| target | writes |")
    assert [re.findall(r"`(\w+)`", row[0])[0] for row in rows] == [
        "jsonl",
        "parquet",
        "mlflow",
        "qrels",
    ]
    assert not [row[0] for row in rows if "default" in row[0]]
    done = rageval("export", "bm25", "--out", str(tmp_path / "x.jsonl"), db=tmp_path / "s.duckdb")
    assert done.returncode == 2 and "--to" in done.stderr
