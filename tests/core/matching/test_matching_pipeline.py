"""The fast paths of scoring (plain-text normalisation, the pipelined pool, block-wise
ensure_scored) give exactly what the plain definitions give."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rapidfuzz import fuzz

from bench.native_scale import write_native_run
from rageval_core.matching import scorers as matching, pool as matching_pool
from rageval_core.matching import normalise as normalisation
from rageval_core.importing import import_paths
from rageval_core.matching.scorers import (
    Normalisation,
    PairScorer,
    normalise,
    normalise_many,
    score_pairs,
)
from rageval_core.store import Store, scores
from rageval_core.store.scores import ensure_scored, load_pair_rows
from tests.core.matching.test_matching import ALL_NORMS, reference_normalise
from tests.paths import REPO

# Clean ASCII, edge and doubled spaces, control characters (whitespace or not), NUL, Unicode
# whitespace and a length-changing lowercase ('İ').
FAST_ALPHABET = "abAB xy  \t\n\x00\x01\x1c\x1f\x7f\xa0\u2003\u0130\u00e9"
fast_texts = st.text(alphabet=FAST_ALPHABET, max_size=30)


def test_space_table_is_what_str_split_splits_on() -> None:
    """The plain-text check reads whitespace with str.split; the full pass with _space_table."""
    table = normalisation._space_table()
    for code in range(normalisation._N_CODEPOINTS):
        ch = chr(code)
        splits = len(f"a{ch}b".split()) == 2
        assert table[code] == ch.isspace() == splits, hex(code)


@settings(max_examples=300, deadline=None)
@given(st.lists(fast_texts, max_size=12), st.sampled_from(ALL_NORMS))
def test_batches_equal_the_per_character_reference(batch: list[str], norm: Normalisation) -> None:
    for (out, offsets), text in zip(normalise_many(batch, norm), batch, strict=True):
        ref_out, ref_offsets = reference_normalise(text, norm)
        assert out == ref_out
        assert offsets.tolist() == ref_offsets and offsets.dtype == np.int32


def test_both_passes_lowercase_the_whole_text() -> None:
    # str.lower() of the whole text: a final sigma becomes 'ς' (the per-character reference
    # above cannot say that), on the plain path and on the full pass alike
    assert [t for t, _ in normalise_many(["AΣ", "AΣ\tB", "ΣΑΣ ΟΣ"])] == ["aς", "aς b", "σας ος"]


def test_plain_texts_skip_the_per_character_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []
    real = normalisation._normalise_arrays

    def spy(texts, norm):  # type: ignore[no-untyped-def]
        seen.extend(texts)
        return real(texts, norm)

    monkeypatch.setattr(normalisation, "_normalise_arrays", spy)
    texts = [
        "Tax Rate",
        "  two edge spaces ",
        "",
        "café au lait",
        "a  b",
        "a\tb",
        "x\x00y",
        "\u0130stanbul",
        " ",
        "a\xa0b",
    ]
    out, maps = normalisation._normalise_texts(texts, Normalisation())
    assert seen == ["a  b", "a\tb", "x\x00y", "\u0130stanbul", "a\xa0b"]
    assert out[:4] == ["tax rate", "two edge spaces", "", "café au lait"]
    assert maps[:4] == [0, 2, 0, 0] and isinstance(maps[8], int) and out[8] == ""
    # the shift is the offset map: the same as the full pass gives
    for text, m in zip(texts, maps, strict=True):
        if isinstance(m, int):
            assert (
                list(range(m, m + len(normalise(text)[0])))
                == reference_normalise(text, Normalisation())[1]
            )


def random_pairs(
    seed: int, n_chunks: int = 40, n_spans: int = 15
) -> tuple[list[str], list[str], np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    # an empty word makes doubled spaces; a line break and capitals make mapped offsets
    words = np.array(
        ["the", "tax", "rate", "of", "", "income\nrelief", "on", "a", "pension,", "The", "Trust"]
    )
    chunks = [" ".join(rng.choice(words, 60)) for _ in range(n_chunks)]
    spans = [c[s : s + 70] for c in chunks[:n_spans] for s in [int(rng.integers(0, 200))]]
    spans += [" ".join(rng.choice(words, 12)) for _ in range(n_spans)]
    pe = np.repeat(np.arange(len(spans)), n_chunks)
    pc = np.tile(np.arange(n_chunks), len(spans))
    return spans, chunks, pe, pc


@pytest.mark.parametrize(
    ("scorer", "cut"), [("partial", 0.0), ("partial", 0.5), ("ratio", 0.0), ("difflib", 0.0)]
)
def test_pipelined_blocks_on_the_pool_equal_one_call_in_process(
    monkeypatch: pytest.MonkeyPatch, scorer: str, cut: float
) -> None:
    spans, chunks, pe, pc = random_pairs(3)
    want = score_pairs(spans, chunks, pe, pc, scorer=scorer, workers=1, min_align_score=cut)
    monkeypatch.setattr(matching_pool, "POOL_MIN_PAIRS", 20)
    monkeypatch.setattr(matching_pool, "BATCH_MIN", 7)  # many small jobs, several texts in each
    thirds = np.array_split(np.arange(pe.size), 3)
    with PairScorer(scorer, workers=2, min_align_score=cut) as pairs:
        pending = [pairs.submit(spans, chunks, pe[rows], pc[rows]) for rows in thirds]
        got = [p() for p in pending]
    for rows, part in zip(thirds, got, strict=True):
        assert np.array_equal(part.score, want.score[rows])
        assert np.array_equal(part.start, want.start[rows]) and np.array_equal(
            part.end, want.end[rows]
        )


def test_windows_equal_the_definition_on_every_pair() -> None:
    """Brute force: the window is rapidfuzz's alignment (or the substring) less edge spaces."""
    spans, chunks, pe, pc = random_pairs(5, n_chunks=25, n_spans=10)
    got = score_pairs(spans, chunks, pe, pc, workers=1)
    for i, (e, c) in enumerate(zip(pe.tolist(), pc.tolist(), strict=True)):
        ne = normalise(spans[e])[0]
        nc, offsets = normalise(chunks[c])
        if ne in nc:
            score, ds, de = 1.0, nc.index(ne), nc.index(ne) + len(ne)
        else:
            a = fuzz.partial_ratio_alignment(ne, nc)
            score, ds, de = a.score / 100, a.dest_start, a.dest_end
        assert got.score[i] == np.float32(score)
        window = nc[ds:de]
        if score == 0 or not window.strip():
            assert (got.start[i], got.end[i]) == (-1, -1)
            continue
        ds += window.startswith(" ")
        de -= window.endswith(" ")
        assert (got.start[i], got.end[i]) == matching.to_original(offsets, ds, de)


def test_block_wise_scoring_of_a_run_equals_one_call(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "run.jsonl"
    write_native_run(path, 23, n_chunks=6, text_chars=120, seed=4, spans=3)
    monkeypatch.setattr(scores, "BLOCK_QUERIES", 5)  # 5 blocks, the last one short
    monkeypatch.setattr(matching_pool, "POOL_MIN_PAIRS", 10)
    done: list[tuple[int, int]] = []
    with Store(":memory:") as store:
        run = import_paths(store, [path], score=False).imported[0]
        scoring = ensure_scored(
            store, run.run_id, workers=2, progress=lambda d, t: done.append((d, t))
        )
        assert scoring.n_pairs == 23 * 6 * 3 and not scoring.cached
        assert done == [(5, 23), (10, 23), (15, 23), (20, 23), (23, 23)]
        rows = load_pair_rows(store, run.run_id)
        queries = list(store.iter_queries(run.run_id))
    # the reference: every pair of the run in one score_pairs call, in process
    evidence = [e for q in queries for e in q.evidence]
    first = np.cumsum([0] + [len(q.evidence) for q in queries])
    chunks, pe, pc, keys = [], [], [], []
    for qi, q in enumerate(queries):
        for rank, chunk in enumerate(q.retrieved, start=1):
            for k in range(len(q.evidence)):
                keys.append((qi, rank, k))
                pe.append(first[qi] + k)
                pc.append(len(chunks))
            chunks.append(chunk.text)
    want = score_pairs(evidence, chunks, np.array(pe), np.array(pc), workers=1)
    assert (
        list(zip(rows.qidx.tolist(), rows.rank.tolist(), rows.eidx.tolist(), strict=True)) == keys
    )
    assert np.array_equal(rows.score, want.score)
    assert np.array_equal(rows.start, want.start) and np.array_equal(rows.end, want.end)
    assert (rows.score == 1.0).sum() >= 23 * 3  # each span is cut from one of its chunks


def test_rows_read_without_order_by_are_put_in_order() -> None:
    rng = np.random.default_rng(0)
    qidx = np.repeat(np.arange(5), 4)
    rank = np.tile(np.arange(1, 5), 5)
    text = np.array([f"q{q} r{r}" for q, r in zip(qidx, rank, strict=True)], dtype=object)
    shuffled = rng.permutation(qidx.size)
    got = scores._in_order(
        {"qidx": qidx[shuffled], "rank": rank[shuffled], "text": text[shuffled]}, "rank"
    )
    assert got["text"].tolist() == text.tolist() and got["rank"].tolist() == rank.tolist()
    same = {"qidx": qidx, "rank": rank, "text": text}
    assert scores._in_order(same, "rank") is same  # already in order: nothing copied


HOLD_A_POOL = """
import sys, time
import numpy as np
from rageval_core.matching import scorers as matching, pool as matching_pool
from tests.core.matching.test_matching_pipeline import random_pairs

matching_pool.POOL_MIN_PAIRS = 10
spans, chunks, pe, pc = random_pairs(1)
pairs = matching.PairScorer(workers=2)
pending = pairs.submit(spans, chunks, pe, pc)
print(" ".join(str(p) for p in pairs._pool._executor._processes), flush=True)
time.sleep(600)  # killed here, with the pool still open
"""


def test_pool_workers_leave_when_their_owner_is_killed() -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    repo = REPO
    owner = subprocess.Popen(
        [sys.executable, "-c", HOLD_A_POOL], cwd=repo, stdout=subprocess.PIPE, text=True
    )
    try:
        assert owner.stdout is not None
        workers = [int(p) for p in owner.stdout.readline().split()]
        assert len(workers) == 2
    finally:
        owner.send_signal(signal.SIGKILL)
        owner.wait()

    def alive(pid: int) -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        stat = Path(f"/proc/{pid}/stat").read_text() if Path(f"/proc/{pid}/stat").exists() else ""
        return " Z " not in stat  # a zombie has exited

    deadline = time.monotonic() + 30
    while any(map(alive, workers)) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = [pid for pid in workers if alive(pid)]
    for pid in left:  # never leave them running, even when the test fails
        os.kill(pid, signal.SIGKILL)
    assert left == [], "pool workers outlived their killed owner"


def test_scoring_a_file_store_caps_duckdb_cache_then_gives_the_limit_back(tmp_path: Path) -> None:
    from rageval_core.store.store import IMPORT_MEMORY_LIMIT, _bytes

    path = tmp_path / "run.jsonl"
    write_native_run(path, 12, n_chunks=4, text_chars=100, seed=1, spans=2)
    with Store(tmp_path / "store.duckdb") as store:
        run = import_paths(store, [path], score=False).imported[0]

        def limit() -> str:
            with store._cursor() as cur:
                return str(cur.execute("SELECT current_setting('memory_limit')").fetchall()[0][0])

        before = limit()
        during: list[str] = []
        ensure_scored(
            store, run.run_id, workers=1, progress=lambda done, total: during.append(limit())
        )
        assert during and all(
            _bytes(x) <= _bytes(IMPORT_MEMORY_LIMIT) < _bytes(before) for x in during
        )
        assert limit() == before
