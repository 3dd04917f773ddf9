"""`pip install rageval` is the core and the CLI; the dashboard's stack is the `dashboard` extra.

The second test runs the CLI in a Python that truly lacks Streamlit, plotly and pandas: a
site-packages made of links to this environment's packages, those three (and their metadata) left
out, with `python -S` so the real site-packages is not on the path.
"""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

from tests.paths import REPO

UI = ("streamlit", "plotly", "pandas")


def _name(requirement: str) -> str:
    return requirement.split(">")[0].split("=")[0].split("[")[0].split("<")[0].strip().lower()


def test_the_core_depends_on_no_ui_package_and_the_extra_brings_them() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    core = {_name(r) for r in project["dependencies"]}
    assert core == {
        "numpy",
        "duckdb",
        "rapidfuzz",
        "tqdm",
        "pyarrow",
        "openinference-semantic-conventions",
    }
    extras = project["optional-dependencies"]
    assert {_name(r) for r in extras["dashboard"]} == set(UI)
    assert "rageval[dashboard]" in extras["test"]  # the suite runs the app


def _site_without_ui(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    site.mkdir()
    real = Path(sysconfig.get_paths()["purelib"])
    for entry in real.iterdir():
        top = entry.name.split("-")[0].split(".")[0].lower()
        if top in UI or entry.suffix == ".pth":
            continue
        (site / entry.name).symlink_to(entry)
    return site


def _cli(site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    code = "import sys; from rageval_core.cli.dispatch import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run(
        [sys.executable, "-S", "-c", code, *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={"PYTHONPATH": f"{REPO}:{site}", "PATH": "/usr/bin:/bin"},
        timeout=120,
    )


def test_without_the_extra_every_command_but_the_dashboard_works(tmp_path: Path) -> None:
    site = _site_without_ui(tmp_path)
    probe = subprocess.run(
        [
            sys.executable,
            "-S",
            "-c",
            "import importlib.util as u; print([u.find_spec(n) is None "
            "for n in ('streamlit', 'plotly', 'pandas', 'duckdb', 'numpy')])",
        ],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(site)},
        check=True,
    )
    assert probe.stdout.strip() == "[True, True, True, False, False]"  # the setting is real

    db = tmp_path / "s.duckdb"
    run = str(REPO / "sample_runs" / "bm25.jsonl")
    evaluated = _cli(site, "evaluate", run, "--json")
    assert evaluated.returncode == 0, evaluated.stderr
    assert json.loads(evaluated.stdout)["metrics"]["nDCG@10"] > 0
    imported = _cli(site, "--db", str(db), "import", run)
    assert imported.returncode == 0, imported.stderr
    assert _cli(site, "--db", str(db), "runs").stdout.count("bm25") == 1

    dashboard = _cli(site, "--db", str(db), "dashboard")
    assert dashboard.returncode == 2
    assert "Traceback" not in dashboard.stderr
    assert dashboard.stderr.strip() == (
        "rageval: the dashboard needs streamlit, plotly, pandas, which `pip install rageval` "
        "leaves out: pip install 'rageval[dashboard]' (the core and every other command work "
        "without it)"
    )
