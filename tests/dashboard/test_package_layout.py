"""The dashboard in the project's namespace, laid out by job (issue 29): what a shared link holds
stays, no wheel installs a bare `dashboard`, the data side never imports Streamlit, and every
cache lives in state/ and is cleared after a write."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from streamlit.runtime.caching.cache_resource_api import CachedResourceFuncInfo
from streamlit.runtime.caching.cache_utils import CachedFunc

from rageval_dashboard import keys, state
from tests.paths import REPO

PACKAGE = REPO / "rageval_dashboard"

#: url path -> title of every page: the path part of every link shared before the move
PUBLISHED = {
    "overview": "Overview",
    "queries": "Queries",
    "why": "Why failing",
    "threshold": "Threshold tuning",
    "compare": "Compare",
    "latency": "Latency & cost",
    "judge": "Judge",
    "calibration": "Judge calibration",
    "sweeps": "Sweeps",
    "labelling": "Labelling",
    "runs": "Runs",
}
#: the sidebar's query parameters and the open query's (the pages' own bound widget keys are
#: constants in keys.py, which the move left as they were)
URL_PARAMS = {
    "run", "k", "threshold", "scorer", "punct", "articles", "relevance", "cut", "cut_on",
    "numbers", "preset", "judged", "embedder", "judge", "q", "near_miss_band", "split_min_chars",
    "labels", "annotator", "cross_encoder",
}  # fmt: skip


def test_each_page_keeps_the_url_path_of_its_shared_links() -> None:
    assert {p.url_path: p.title for p in keys.PAGES} == PUBLISHED
    assert keys.PAGES[0].url_path == "overview"  # the default page, at / too
    files = sorted(p.name for p in (PACKAGE / "app_pages").glob("*.py"))
    assert sorted(p.file for p in keys.PAGES) == files
    # app.py registers every page by its url path, never by its file's name alone
    app = (PACKAGE / "app.py").read_text(encoding="utf-8")
    assert "url_path=p.url_path" in app and "keys.PAGES" in app


def test_the_sidebar_s_query_parameters_keep_their_names() -> None:
    found = {
        *keys.URL_KEYS.values(),
        *(keys.CUT_ON, keys.RUN, keys.JUDGE, keys.QUERY_PARAM, keys.ANNOTATOR),
    }
    assert found == URL_PARAMS


def test_no_wheel_installs_a_bare_dashboard_package(tmp_path: Path) -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    include = project["tool"]["setuptools"]["packages"]["find"]["include"]
    assert include == ["rageval", "rageval_core*", "rageval_dashboard*"]
    tops = {p.name for p in REPO.iterdir() if (p / "__init__.py").is_file()}
    assert tops == {"rageval", "rageval_core", "rageval_dashboard", "tests", "bench"}
    # from another folder, as an installed user: `dashboard` is not importable, ours is
    probe = (
        "import importlib.util as u; "
        "print(u.find_spec('dashboard') is None, u.find_spec('rageval_dashboard') is not None)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == ["True", "True"]


def test_the_data_side_never_imports_streamlit(tmp_path: Path) -> None:
    """Every module of components/ (figures, tables, text as data) imported in a fresh
    interpreter leaves Streamlit unloaded (import-linter's contract checks the same statically)."""
    modules = sorted(
        ".".join(p.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
        for p in (PACKAGE / "components").rglob("*.py")
    )
    assert "rageval_dashboard.components.figures.compare" in modules and len(modules) >= 12
    probe = (
        "import importlib, sys\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'streamlit'))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_every_cache_is_in_the_state_package() -> None:
    outside = [
        str(p.relative_to(PACKAGE))
        for p in PACKAGE.rglob("*.py")
        if "st.cache_" in p.read_text(encoding="utf-8") and p.parent.name != "state"
    ]
    assert outside == []


@pytest.mark.filterwarnings("ignore")
def test_clear_caches_reaches_every_cached_result_of_every_state_module(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A cache added to any state module is cleared after an import, rename or delete, or this
    fails: only the Store itself and the registries (no arguments) stay."""
    import importlib
    import inspect
    import pkgutil

    cleared: list[str] = []
    per_run: list[str] = []
    for info in pkgutil.iter_modules(state.__path__):
        module = importlib.import_module(f"rageval_dashboard.state.{info.name}")
        for name, value in vars(module).items():
            if not isinstance(value, CachedFunc) or value._info.func.__module__ != module.__name__:
                continue
            label = f"{info.name}.{name}"
            monkeypatch.setattr(value, "clear", lambda label=label: cleared.append(label))
            resource = isinstance(value._info, CachedResourceFuncInfo)
            takes = inspect.signature(value._info.func).parameters
            if resource and takes and label != "storage._store":
                per_run.append(label)
    state.clear_caches()
    assert len(per_run) >= 20  # the 18 cleared before the split and Compare's two
    assert sorted(set(per_run) - set(cleared)) == []
