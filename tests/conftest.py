"""Test tiers by folder, and the trec_eval oracle: skipped with the reason on a user's clone,
a failure in CI."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from tests.paths import ORACLE, ORACLE_MISSING, PARITY, PARITY_MISSING, REPO, in_ci


#: a marker per folder: `pytest -m store` runs the store's tests, `-m "not e2e"` skips the browser
FOLDER_MARKERS = {
    ("core", "formats"): "formats",
    ("core", "metrics"): "metrics",
    ("core", "store"): "store",
    ("core", "matching"): "matching",
    ("core", "cli"): "cli",
    ("core", "compare"): "compare",
    ("core", "judge"): "judge",
    ("core", "collect"): "collect",
    ("bench",): "bench",
    ("dashboard",): "dashboard",
    ("e2e",): "e2e",
    ("install",): "install",
}
#: left out of `make test-fast` (still in `make test` and CI): tests/bench (the bench smoke
#: tests), tests/install (each extra installed alone into an empty venv) and these files:
#: fuzzing, and tests that start and kill processes or hold files across them
SLOW_FILES = frozenset(
    {
        "test_fuzz_readers.py",
        "test_concurrency.py",
        "test_crash.py",
        "test_native_fast_import.py",
        "test_partition.py",
        "test_judge_sigint.py",
        "test_collect_process.py",
        "test_doc_examples.py",
    }
)
TESTS = REPO / "tests"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "oracle: reads trec_eval's files under ../shared/oracle")
    config.addinivalue_line(
        "markers", "parity: reads the seed-parity inputs under ../shared/parity"
    )
    for marker in sorted(set(FOLDER_MARKERS.values()) - {"e2e"}):
        config.addinivalue_line("markers", f"{marker}: the tests under that folder of tests/")
    config.addinivalue_line(
        "markers",
        "apptest: a dashboard test that runs the app (AppTest); the others are unit tests of its "
        "components and state (make test-fast runs those)",
    )
    import bench.common

    # the bench smoke tests time nothing they judge: no full collection before each timed call
    bench.common.COLLECT_GARBAGE = False


def folder_marker(path: Path) -> str | None:
    """The marker of a test file's folder (the deepest folder FOLDER_MARKERS names)."""
    parts = path.relative_to(TESTS).parts[:-1]
    for depth in range(len(parts), 0, -1):
        if parts[:depth] in FOLDER_MARKERS:
            return FOLDER_MARKERS[parts[:depth]]
    return None


def runs_the_app(item: pytest.Item) -> bool:
    """A dashboard test that runs the whole app: it takes the AppTest fixtures or makes one."""
    if {"make_app", "app_db"} & set(getattr(item, "fixturenames", ())):
        return True
    function = getattr(item, "function", None)
    try:
        return function is not None and "AppTest" in inspect.getsource(function)
    except (OSError, TypeError):
        return True


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        marker = folder_marker(item.path)
        if marker is not None:
            item.add_marker(marker)
        if marker == "dashboard" and runs_the_app(item):
            item.add_marker(pytest.mark.apptest)
        if marker in ("bench", "install") or item.path.name in SLOW_FILES:
            item.add_marker(pytest.mark.slow)
        if marker in ("e2e", "install"):
            # one pytest-xdist worker runs every browser test (its servers start once), one the
            # clean installs (they build the project's wheel once, in the repository)
            item.add_marker(pytest.mark.xdist_group(marker))
    # the two long groups first: a worker starts on each while the others share everything else,
    # rather than all of them waiting for one worker at the end
    first = {"e2e": 0, "install": 1}
    items.sort(key=lambda item: first.get(folder_marker(item.path) or "", 2))


def pytest_runtest_setup(item: pytest.Item) -> None:
    for marker, folder, missing in (
        ("oracle", ORACLE, ORACLE_MISSING),
        ("parity", PARITY, PARITY_MISSING),
    ):
        if item.get_closest_marker(marker) is None or folder.is_dir():
            continue
        if in_ci():
            pytest.fail(
                f"{missing} ({folder}); CI runs with ../shared beside the clone", pytrace=False
            )
        pytest.skip(f"{missing} (they sit beside the project for its developers and CI)")
