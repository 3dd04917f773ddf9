"""Normalisation, offset maps, scorers and score_pairs against independent references."""

from __future__ import annotations

import difflib
import re
import string
import unicodedata

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rapidfuzz import fuzz
from rapidfuzz.distance import Levenshtein

from rageval_core.matching import scorers as matching, pool as matching_pool
from rageval_core.errors import UsageError
from rageval_core.matching.scorers import (
    SCORERS,
    Normalisation,
    normalise,
    normalise_many,
    score_one,
    score_pairs,
    to_original,
)

ALL_NORMS = [Normalisation(p, a) for p in (False, True) for a in (False, True)]


# --- independent references ----------------------------------------------------------------


def reference_normalise(text: str, norm: Normalisation) -> tuple[str, list[int]]:
    """The rules spelled out one character at a time (slow, obviously right)."""
    chars = [(c, i) for i, ch in enumerate(text) for c in ch.lower()]
    chars = [(" " if c == "\x00" else c, i) for c, i in chars]
    if norm.strip_punct:
        chars = [
            (c, i)
            for c, i in chars
            if c not in string.punctuation and not unicodedata.category(c).startswith("P")
        ]
    if norm.strip_articles:
        joined = "".join(c for c, _ in chars)
        blank = {j for m in re.finditer(r"\b(a|an|the)\b", joined) for j in range(*m.span())}
        chars = [(" " if j in blank else c, i) for j, (c, i) in enumerate(chars)]
    out: list[tuple[str, int]] = []
    for c, i in chars:
        if c.isspace():
            if out and out[-1][0] != " ":
                out.append((" ", i))
        else:
            out.append((c, i))
    if out and out[-1][0] == " ":
        out.pop()
    return "".join(c for c, _ in out), [i for _, i in out]


def squad_normalize_answer(s: str) -> str:
    """SQuAD v1.1 evaluate.py normalize_answer, verbatim in substance."""
    s = s.lower()
    s = "".join(ch for ch in s if ch not in set(string.punctuation))
    s = re.sub(r"\b(a|an|the)\b", " ", s)
    return " ".join(s.split())


# Letters that make articles, ASCII and Unicode punctuation, odd whitespace, an expanding
# lowercase ('İ' -> 'i̇'), NUL, digits and '_' (a word character).
ALPHABET = "aAnNtThHeExyz \u0130.,;!'\"-\u2013\u2019\u00ab\u00bb_1 \t\r\n\xa0\u3000\x00"
texts = st.text(alphabet=ALPHABET, max_size=40)


# --- normalisation ---------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(texts, st.sampled_from(ALL_NORMS))
def test_normalise_matches_the_per_character_reference(text: str, norm: Normalisation) -> None:
    out, offsets = normalise(text, norm)
    ref_out, ref_offsets = reference_normalise(text, norm)
    assert out == ref_out
    assert offsets.tolist() == ref_offsets
    assert offsets.dtype == np.int32


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=string.ascii_letters + string.punctuation + " \t\r\n", max_size=60))
def test_full_normalisation_equals_squad_on_ascii(text: str) -> None:
    assert normalise(text, Normalisation(True, True))[0] == squad_normalize_answer(text)
    assert normalise(text)[0] == " ".join(text.lower().split())


@settings(max_examples=100, deadline=None)
@given(st.lists(texts, max_size=8), st.sampled_from(ALL_NORMS))
def test_batch_equals_one_by_one(batch: list[str], norm: Normalisation) -> None:
    together = normalise_many(batch, norm)
    assert [t for t, _ in together] == [normalise(t, norm)[0] for t in batch]
    for (_, m), text in zip(together, batch, strict=True):
        assert m.tolist() == normalise(text, norm)[1].tolist()


def test_highlight_with_crlf_spaces_and_punctuation() -> None:
    chunk = "Intro.\r\nThe  Quick,  brown\r\n\r\nfox!  Done"
    norm = Normalisation(strip_punct=True)
    text, offsets = normalise(chunk, norm)
    assert text == "intro the quick brown fox done"
    s = text.index("quick brown fox")
    start, end = to_original(offsets, s, s + len("quick brown fox"))
    assert chunk[start:end] == "Quick,  brown\r\n\r\nfox"
    # The same through score_pairs: an exact hit after normalisation, offsets in the original.
    result = score_pairs(["QUICK brown fox"], [chunk], [0], [0], norm=norm, workers=1)
    assert result.score[0] == 1.0
    assert chunk[result.start[0] : result.end[0]] == "Quick,  brown\r\n\r\nfox"


def test_highlight_with_articles_and_expanding_lowercase() -> None:
    chunk = "İzmir is the\tcapital  of an Aegean region"
    text, offsets = normalise(chunk, Normalisation(strip_articles=True))
    assert text == "i̇zmir is capital of aegean region"
    s = text.index("capital of aegean")
    start, end = to_original(offsets, s, s + len("capital of aegean"))
    assert chunk[start:end] == "capital  of an Aegean"
    assert to_original(offsets, 0, 2) == (0, 1)  # both halves of 'i̇' come from 'İ'
    assert to_original(offsets, 3, 3) == (-1, -1)


def test_normalise_edge_cases() -> None:
    assert normalise("")[0] == ""
    assert normalise("")[1].size == 0
    assert normalise(" \r\n\t ")[0] == ""
    assert normalise("a\x00b")[0] == "a b"  # NUL reads as whitespace
    assert normalise("The a an", Normalisation(strip_articles=True))[0] == ""
    assert normalise("don't", Normalisation(strip_punct=True))[0] == "dont"
    # Symbols are not punctuation ($ only because SQuAD's string.punctuation has it).
    assert (
        normalise("\u00ab5\u20ac \u00a9 $5\u00bb", Normalisation(strip_punct=True))[0]
        == "5\u20ac \u00a9 5"
    )
    assert normalise_many([]) == []
    with pytest.raises(UsageError):
        normalise_many(["ok", None])  # type: ignore[list-item]


def test_normalisation_key_is_stable_and_round_trips() -> None:
    assert Normalisation().key == "v1"
    assert Normalisation(True, True).key == "v1+punct+articles"
    assert len({n.key for n in ALL_NORMS}) == 4
    for norm in ALL_NORMS:
        assert Normalisation.from_key(norm.key) == norm
    with pytest.raises(UsageError):
        Normalisation.from_key("v2+punct")


# --- scorers ---------------------------------------------------------------------------------


def test_unknown_scorer_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="known scorers"):
        SCORERS["fuzzy"]
    with pytest.raises(UsageError):
        score_pairs(["a"], ["a"], [0], [0], scorer="nope")
    assert set(SCORERS) == {
        "partial", "ratio", "token_set", "levenshtein", "difflib", "semantic", "hybrid",
        "cross-encoder",
    }  # fmt: skip
    assert matching.get_scorer("ratio").name == "ratio"


REFERENCES = {
    "partial": lambda e, c: fuzz.partial_ratio(e, c) / 100,
    "ratio": lambda e, c: fuzz.ratio(e, c) / 100,
    "token_set": lambda e, c: fuzz.token_set_ratio(e, c) / 100,
    "levenshtein": Levenshtein.normalized_similarity,
    "difflib": lambda e, c: difflib.SequenceMatcher(None, e, c).ratio(),
}

words = st.text(alphabet="abcde ", min_size=0, max_size=90)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(words, min_size=1, max_size=4),
    st.lists(words, min_size=1, max_size=4),
    st.sampled_from(sorted(REFERENCES)),
    st.sampled_from(ALL_NORMS[:2]),
)
def test_scores_equal_the_reference_on_normalised_strings(
    evidence: list[str], chunks: list[str], scorer: str, norm: Normalisation
) -> None:
    pe, pc = np.meshgrid(np.arange(len(evidence)), np.arange(len(chunks)), indexing="ij")
    result = score_pairs(
        evidence, chunks, pe.ravel(), pc.ravel(), scorer=scorer, norm=norm, workers=1
    )
    for i, (e, c) in enumerate(zip(pe.ravel(), pc.ravel(), strict=True)):
        ne, nc = normalise(evidence[e], norm)[0], normalise(chunks[c], norm)[0]
        if not ne:
            expected = 0.0
        elif ne in nc:
            expected = 1.0
        else:
            expected = REFERENCES[scorer](ne, nc)
        assert result.score[i] == pytest.approx(expected, abs=1e-6)


@settings(max_examples=100, deadline=None)
@given(
    st.text(alphabet="abcdefg ", min_size=1, max_size=120),
    st.text(alphabet="abcdefg ", min_size=1, max_size=300),
)
def test_difflib_scorer_reproduces_sequence_matcher(evidence: str, chunk: str) -> None:
    ne, nc = normalise(evidence)[0], normalise(chunk)[0]
    got = score_one(evidence, chunk, scorer="difflib")[0]
    expected = 1.0 if ne and ne in nc else difflib.SequenceMatcher(None, ne, nc).ratio()
    if not ne:
        expected = 0.0
    assert got == pytest.approx(expected, abs=1e-6)


@settings(max_examples=150, deadline=None)
@given(
    st.text(alphabet="abcde ,.\r\n", min_size=1, max_size=100),
    st.text(alphabet="abcde ,.\r\n", min_size=0, max_size=250),
    st.booleans(),
)
def test_partial_window_maps_back_to_the_aligned_window(
    evidence: str, chunk: str, strip_punct: bool
) -> None:
    norm = Normalisation(strip_punct=strip_punct)
    ne = normalise(evidence, norm)[0]
    nc, offsets = normalise(chunk, norm)
    score, start, end = score_one(evidence, chunk, norm=norm)
    if not ne:
        assert (score, start, end) == (0.0, -1, -1)
        return
    assert score == pytest.approx(fuzz.partial_ratio(ne, nc) / 100, abs=1e-6)
    if ne in nc:
        ds, de = nc.index(ne), nc.index(ne) + len(ne)
    else:
        a = fuzz.partial_ratio_alignment(ne, nc)
        ds, de = a.dest_start, a.dest_end
        # The reference window really scores what partial_ratio says.
        if a.score > 0:
            assert fuzz.ratio(ne[a.src_start : a.src_end], nc[ds:de]) == pytest.approx(a.score)
        if len(ne) < len(nc):
            assert fuzz.ratio(ne, nc[ds:de]) / 100 == pytest.approx(score, abs=1e-6)
    window = nc[ds:de]
    if score == 0 or not window.strip():
        assert (start, end) == (-1, -1)
        return
    # Offsets are that window (edge spaces left out) in the ORIGINAL text ...
    ds += window.startswith(" ")
    de -= window.endswith(" ")
    assert (start, end) == to_original(offsets, ds, de)
    # ... and the original window normalises back to it.
    assert normalise(chunk[start:end], norm)[0] == nc[ds:de]


def test_partial_window_rescored_in_the_original_text() -> None:
    chunk = "Preface.  The Treaty of\r\nWestphalia was signed in 1648, ending the war."
    evidence = "the treaty of westfalia was signed"
    score, start, end = score_one(evidence, chunk)
    assert 0.9 < score < 1.0
    # Windows starting at 't' or 'h' of "the" score the same; rapidfuzz keeps the later one.
    assert chunk[start:end] == "he Treaty of\r\nWestphalia was signed"
    rescored = fuzz.ratio(normalise(evidence)[0], normalise(chunk[start:end])[0]) / 100
    assert rescored == pytest.approx(score, abs=1e-6)


@pytest.mark.parametrize("scorer", sorted(REFERENCES))
def test_exact_substring_scores_one_with_offsets_for_every_scorer(scorer: str) -> None:
    chunk = "Alpha beta.\n\nGAMMA   delta epsilon"
    result = score_pairs(
        ["gamma delta", "zeta", ""], [chunk], [0, 1, 2], [0, 0, 0], scorer=scorer, workers=1
    )
    assert result.score[0] == 1.0
    assert chunk[result.start[0] : result.end[0]] == "GAMMA   delta"
    assert result.score[2] == 0.0 and result.start[2] == -1  # empty evidence matches nothing
    if not SCORERS[scorer].aligns:
        assert result.start[1] == result.end[1] == -1
    assert result.score.dtype == np.float32 and result.start.dtype == np.int32


def test_duplicates_are_scored_once_and_results_keep_pair_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[int] = []
    real = matching._run_batch

    def counting(kind: str, evidence: list[str], chunks: list[str]):  # type: ignore[no-untyped-def]
        calls.append(len(evidence))
        return real(kind, evidence, chunks)

    evidence = ["fox jumps", "Fox  jumps", "lazy cat", "fox jumps"]
    chunks = ["the quick brown fox jumped", "a lazy dog", "the quick brown fox jumped"]
    pe = np.array([0, 1, 2, 0, 2, 2, 3])
    pc = np.array([0, 2, 1, 1, 1, 0, 2])
    monkeypatch.setattr(matching, "_run_batch", counting)
    result = score_pairs(evidence, chunks, pe, pc, workers=1)
    # Texts dedupe by their string (not their normalised form), pairs by (text, text): the
    # 7 pairs hold 5 distinct ones, none an exact substring.
    assert sum(calls) == 5
    singles = [score_one(evidence[e], chunks[c]) for e, c in zip(pe, pc, strict=True)]
    assert result.score.tolist() == pytest.approx([s for s, _, _ in singles])
    assert result.start.tolist() == [s for _, s, _ in singles]
    assert result.score[0] == result.score[6] and result.score[3] != result.score[0]


def test_min_align_score_skips_windows_but_not_scores() -> None:
    evidence = ["quick brown fox", "zzzz qqqq"]
    chunks = ["the quick brown fax jumped", "nothing in common here at all"]
    pe, pc = np.array([0, 1, 0]), np.array([0, 1, 1])
    full = score_pairs(evidence, chunks, pe, pc, workers=1)
    partial = score_pairs(evidence, chunks, pe, pc, workers=2, min_align_score=0.8)
    assert partial.score.tolist() == pytest.approx(full.score.tolist(), abs=1e-6)
    assert full.score[0] >= 0.8 and partial.start[0] == full.start[0] >= 0
    assert full.score[2] < 0.8 and full.start[2] >= 0 and partial.start[2] == -1


def test_process_pool_gives_the_in_process_results(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(7)
    alphabet = np.array(list("abcdefgh   "))
    chunks = ["".join(rng.choice(alphabet, 120)) for _ in range(30)]
    evidence = [c[10:60] for c in chunks[:10]] + [
        "".join(rng.choice(alphabet, 70)) for _ in range(10)
    ]
    pe = np.repeat(np.arange(20), 30)
    pc = np.tile(np.arange(30), 20)
    expected = {
        s: score_pairs(evidence, chunks, pe, pc, scorer=s, workers=1)
        for s in ("partial", "difflib")
    }
    monkeypatch.setattr(matching_pool, "POOL_MIN_PAIRS", 50)
    for scorer, want in expected.items():
        got = score_pairs(evidence, chunks, pe, pc, scorer=scorer, workers=2)
        assert np.array_equal(got.score, want.score)
        assert np.array_equal(got.start, want.start) and np.array_equal(got.end, want.end)


def test_small_blocks_give_the_same_results(monkeypatch: pytest.MonkeyPatch) -> None:
    chunks = ["alpha beta gamma", "delta epsilon", "zeta eta theta", "iota kappa"]
    evidence = ["beta gamma", "epsilon", "theta iota"]
    pe = np.repeat(np.arange(3), 4)
    pc = np.tile(np.arange(4), 3)
    one_block = score_pairs(evidence, chunks, pe, pc, workers=1)
    monkeypatch.setattr(matching, "BLOCK_CHARS", 10)
    many_blocks = score_pairs(evidence, chunks, pe, pc, workers=1)
    assert np.array_equal(one_block.score, many_blocks.score)
    assert np.array_equal(one_block.start, many_blocks.start)


def test_bad_arguments_are_usage_errors() -> None:
    with pytest.raises(UsageError, match="differ in length"):
        score_pairs(["a"], ["b"], [0, 0], [0])
    with pytest.raises(UsageError, match="outside"):
        score_pairs(["a"], ["b"], [1], [0])
    with pytest.raises(UsageError, match="integer"):
        score_pairs(["a"], ["b"], [0.5], [0])
    with pytest.raises(UsageError, match="workers"):
        score_pairs(["a"], ["b"], [0], [0], workers=-1)
    with pytest.raises(UsageError, match="expected str"):
        score_pairs(["a"], [None], [0], [0])  # type: ignore[list-item]
    empty = score_pairs([], [], np.zeros(0, int), np.zeros(0, int))
    assert len(empty) == 0 and empty.score.dtype == np.float32
