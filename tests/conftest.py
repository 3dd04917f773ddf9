"""Test tiers by folder, and the trec_eval oracle: skipped with the reason on a user's clone,
a failure in CI."""

from __future__ import annotations

import pytest

from tests.paths import ORACLE, ORACLE_MISSING, REPO, in_ci


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "oracle: reads trec_eval's files under ../shared/oracle")
    import bench.common

    # the bench smoke tests time nothing they judge: no full collection before each timed call
    bench.common.COLLECT_GARBAGE = False


#: whole files left out of `make test-fast` (still in `make test` and CI): the bench smoke tests,
#: fuzzing, and the tests that start and kill processes or hold files across them
SLOW_FILES = frozenset({
    "test_bench_smoke.py", "test_bench_dashboard_scale.py", "test_bench_pair_scoring.py",
    "test_fuzz_readers.py", "test_concurrency.py", "test_crash.py", "test_native_fast_import.py",
    "test_partition.py",
})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    e2e = REPO / "tests" / "e2e"
    for item in items:
        if item.path.name in SLOW_FILES:
            item.add_marker(pytest.mark.slow)
        if e2e in item.path.parents:
            item.add_marker(pytest.mark.e2e)
            # one pytest-xdist worker runs every browser test: its servers start once
            item.add_marker(pytest.mark.xdist_group("e2e"))
    # the browser tests first: one worker starts on them while the others share everything else,
    # rather than all of them waiting for that one worker at the end
    items.sort(key=lambda item: e2e not in item.path.parents)


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("oracle") is None or ORACLE.is_dir():
        return
    if in_ci():
        pytest.fail(f"{ORACLE_MISSING} ({ORACLE}); CI runs with ../shared beside the clone",
                    pytrace=False)
    pytest.skip(f"{ORACLE_MISSING} (they sit beside the project for its developers and CI)")
