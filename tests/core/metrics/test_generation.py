"""Answer metrics: SQuAD's own functions re-typed as an independent reference, hand LCS cases."""

from __future__ import annotations

import math
import re
import string
from collections import Counter

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from rapidfuzz.distance import LCSseq

from rageval_core.metrics import generation as g

# --- the official SQuAD v1.1 evaluate script's functions, literally --------------------------


def squad_normalize_answer(s):  # type: ignore[no-untyped-def]
    """Lower text and remove punctuation, articles and extra whitespace."""

    def remove_articles(text):  # type: ignore[no-untyped-def]
        return re.sub(r"\b(a|an|the)\b", " ", text)

    def white_space_fix(text):  # type: ignore[no-untyped-def]
        return " ".join(text.split())

    def remove_punc(text):  # type: ignore[no-untyped-def]
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    def lower(text):  # type: ignore[no-untyped-def]
        return text.lower()

    return white_space_fix(remove_articles(remove_punc(lower(s))))


def squad_f1_score(prediction, ground_truth):  # type: ignore[no-untyped-def]
    prediction_tokens = squad_normalize_answer(prediction).split()
    ground_truth_tokens = squad_normalize_answer(ground_truth).split()
    common = Counter(prediction_tokens) & Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(ground_truth_tokens)
    f1 = (2 * precision * recall) / (precision + recall)
    return f1


def squad_exact_match_score(prediction, ground_truth):  # type: ignore[no-untyped-def]
    return squad_normalize_answer(prediction) == squad_normalize_answer(ground_truth)


def squad_metric_max_over_ground_truths(metric_fn, prediction, ground_truths):  # type: ignore
    scores_for_ground_truths = []
    for ground_truth in ground_truths:
        score = metric_fn(prediction, ground_truth)
        scores_for_ground_truths.append(score)
    return max(scores_for_ground_truths)


def naive_lcs(a: list[str], b: list[str]) -> int:
    """The textbook (len(a)+1) x (len(b)+1) table."""
    t = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            t[i][j] = t[i - 1][j - 1] + 1 if a[i - 1] == b[j - 1] else max(t[i - 1][j], t[i][j - 1])
    return t[len(a)][len(b)]


# text made of words, articles, punctuation and odd spacing, to exercise normalisation
_word = st.sampled_from(
    [
        "The",
        "the",
        "a",
        "An",
        "cat",
        "Cat!",
        "sat",
        "mat.",
        "on",
        "theory",
        "an-",
        "'s",
        "U.S.",
        "Denver",
        "Broncos",
        ",",
        "?",
        "  ",
        "\t",
        "é",
        "naïve",
        "x",
    ]
)
_text = st.lists(_word, max_size=12).map(" ".join)


# --- normalisation, EM, F1 --------------------------------------------------------------------


def test_normalize_examples() -> None:
    assert g.normalize_answer("The  Cat, sat on a mat!") == "cat sat on mat"
    assert g.normalize_answer("theory of an apple") == "theory of apple"  # \b keeps "theory"
    assert g.normalize_answer("U.S.A.") == "usa"
    assert g.normalize_answer("   ") == ""


@settings(max_examples=300, deadline=None)
@given(_text)
def test_normalize_equals_squad(text: str) -> None:
    assert g.normalize_answer(text) == squad_normalize_answer(text)


def test_em_and_f1_hand_examples() -> None:
    # SQuAD-style: articles and punctuation do not matter
    assert g.exact_match("The Denver Broncos!", "denver broncos") == 1.0
    assert g.exact_match("Denver", "Denver Broncos") == 0.0
    # "Denver Broncos" vs "Broncos": P = 1/2, R = 1, F1 = 2/3
    assert g.token_f1("Denver Broncos", "Broncos") == pytest.approx(2 / 3)
    # repeated tokens count as a multiset: "the cat cat" vs "cat": common 1, P=1/2, R=1
    assert g.token_f1("cat cat", "cat") == pytest.approx(2 / 3)
    assert g.token_f1("dog", "cat") == 0.0
    # several references: the best one counts
    refs = ["Denver Broncos", "Broncos", "the Broncos team"]
    assert g.exact_match("broncos", refs) == 1.0
    assert g.token_f1("Broncos team", refs) == pytest.approx(
        squad_metric_max_over_ground_truths(squad_f1_score, "Broncos team", refs)
    )


@settings(max_examples=300, deadline=None)
@given(_text, _text)
def test_em_f1_equal_squad_script(answer: str, reference: str) -> None:
    assert g.exact_match(answer, reference) == float(squad_exact_match_score(answer, reference))
    # the one deliberate difference: both empty after normalisation is 1 (SQuAD v2.0), not 0
    assume(squad_normalize_answer(answer) or squad_normalize_answer(reference))
    assert g.token_f1(answer, reference) == pytest.approx(squad_f1_score(answer, reference))


def test_empty_and_none_cases() -> None:
    assert math.isnan(g.exact_match(None, "x"))
    assert math.isnan(g.token_f1("x", None))
    assert math.isnan(g.rouge_l(None, None))
    assert math.isnan(g.exact_match("x", []))
    # empty reference: EM = 1 only if the answer is empty too (after normalisation)
    assert g.exact_match("", "") == 1.0
    assert g.exact_match("The.", "a") == 1.0
    assert g.exact_match("cat", "") == 0.0
    assert g.token_f1("", "") == 1.0
    assert g.token_f1("cat", "") == 0.0
    assert g.token_f1("", "cat") == 0.0
    assert g.rouge_l("", "the") == 1.0
    assert g.rouge_l("cat", "") == 0.0


# --- ROUGE-L ------------------------------------------------------------------------------------


def test_rouge_l_hand_lcs() -> None:
    # Lin (2004)'s example. ref "police killed the gunman" -> [police, killed, gunman]
    # "police kill the gunman" -> [police, kill, gunman]: LCS = 2, P = R = 2/3
    assert g.rouge_l("police kill the gunman", "police killed the gunman") == pytest.approx(2 / 3)
    # "the gunman kill police" -> [gunman, kill, police]: LCS = 1 (gunman or police), F = 1/3
    assert g.rouge_l("the gunman kill police", "police killed the gunman") == pytest.approx(1 / 3)
    # LCS of "q b c d e" and "q x c y e z" = 3 (q c e): P = 3/6 (answer), R = 3/5 (reference)
    assert g.lcs_length(list("abcde"), list("axcyez")) == 3
    p, r = 3 / 6, 3 / 5
    assert g.rouge_l("q x c y e z", "q b c d e") == pytest.approx(2 * p * r / (p + r))
    assert g.lcs_length([], ["a"]) == 0
    assert g.lcs_length(["a"], ["a"]) == 1


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from("abcdef"), max_size=30),
    st.lists(st.sampled_from("abcdef"), max_size=30),
)
def test_lcs_equals_textbook_table_and_rapidfuzz(a: list[str], b: list[str]) -> None:
    n = g.lcs_length(a, b)
    assert n == naive_lcs(a, b)
    assert n == g.lcs_length(b, a)
    assert n == LCSseq.similarity(a, b)


def test_lcs_long_inputs_are_not_capped() -> None:
    rng = np.random.default_rng(3)
    words = [f"w{i}" for i in range(50)]
    a = [words[i] for i in rng.integers(0, 50, 3000)]
    b = [words[i] for i in rng.integers(0, 50, 2500)]
    assert g.lcs_length(a, a) == 3000
    assert g.lcs_length(a, b) == LCSseq.similarity(a, b)


# --- relevance and support ----------------------------------------------------------------------


def test_answer_relevance() -> None:
    # answer [capital, of, france, is, paris] vs query [what, is, capital, of, france]: 4 common
    p, r = 4 / 5, 4 / 5
    assert g.answer_relevance(
        "The capital of France is Paris.", "What is the capital of France?"
    ) == (pytest.approx(2 * p * r / (p + r)))
    assert math.isnan(g.answer_relevance("x", None))


def test_support_hand_example() -> None:
    chunks = ["Paris is the capital of France.", None, "It has museums."]
    answer = "The capital is Paris, in Europe."
    # tokens [capital, is, paris, in, europe]; chunk vocabulary: paris is capital of france it
    # has museums. content words [capital, paris, europe]: 2 of 3 found
    assert g.support_coverage(answer, chunks) == pytest.approx(2 / 3)
    # all tokens: capital, is, paris found; in, europe not: 3 of 5
    assert g.support_density(answer, chunks) == pytest.approx(3 / 5)
    assert g.hallucination_rate(answer, chunks) == pytest.approx(2 / 5)
    # occurrences count: "paris paris rome" -> 2 of 3
    assert g.support_coverage("paris paris rome", chunks) == pytest.approx(2 / 3)


def test_support_edge_cases() -> None:
    assert math.isnan(g.support_coverage(None, ["x"]))
    assert math.isnan(g.support_coverage("paris", None))  # no retrieval recorded
    assert math.isnan(g.support_coverage("paris", [None, None]))  # texts unknown
    assert g.support_coverage("paris", []) == 0.0  # retrieved nothing: nothing supports it
    assert g.hallucination_rate("paris", []) == 1.0
    assert math.isnan(g.support_coverage("it is", ["paris"]))  # no content word to check
    assert g.support_density("it is", ["it is"]) == 1.0
    assert math.isnan(g.support_density("", ["x"]))
    assert math.isnan(g.hallucination_rate("", ["x"]))


# --- batch ----------------------------------------------------------------------------------------


def test_generation_scores_matches_single_functions() -> None:
    answers = ["The Denver Broncos", None, "Paris, in Europe", "", "it is"]
    refs: list[str | list[str] | None] = ["Denver Broncos", "x", None, "", ["nope", "it is"]]
    queries = ["Who won?", "q", "Capital of France?", None, "is it?"]
    chunks: list[list[str | None] | None] = [
        ["The Broncos won the game."],
        ["x"],
        ["Paris is in France"],
        [],
        None,
    ]
    out = g.generation_scores(answers, refs, queries, chunks)
    assert list(out) == list(g.GENERATION_METRICS)
    for name, metric in g.GENERATION_METRICS.items():
        col = out[name]
        assert col.dtype == np.float64 and col.shape == (5,)
        other = {
            "reference": refs,
            "query": queries,
            "chunks": chunks,
            "query_chunks": list(zip(queries, chunks, strict=True)),
        }[metric.needs]
        expected = [metric.score(a, o) for a, o in zip(answers, other, strict=True)]
        if metric.kind == "semantic":  # one batch vs one text at a time: float rounding
            np.testing.assert_allclose(col, np.array(expected, dtype=float), atol=1e-6)
        else:
            np.testing.assert_array_equal(col, np.array(expected, dtype=float), err_msg=name)
    assert np.isnan([out[n][1] for n in out]).all()  # no answer: nothing scored
    assert out["EM"][0] == 1.0 and out["EM"][3] == 1.0 and out["EM"][4] == 1.0
    assert math.isnan(out["EM"][2])


def test_generation_scores_empty_and_mismatch() -> None:
    out = g.generation_scores([], [], [], [])
    assert all(v.size == 0 for v in out.values())
    with pytest.raises(ValueError):
        g.generation_scores(["a"], [], ["q"], [None])


@settings(max_examples=150, deadline=None)
@given(_text, _text, st.lists(_text, max_size=3))
def test_scores_are_in_unit_interval(answer: str, reference: str, chunks: list[str]) -> None:
    out = g.generation_scores([answer], [reference], [reference], [chunks])
    for name, col in out.items():
        v = col[0]
        assert math.isnan(v) or 0.0 <= v <= 1.0, name
    if not math.isnan(out["SupportDensity"][0]):
        assert out["HallucinationRate"][0] == pytest.approx(1 - out["SupportDensity"][0])
    # ROUGE-L >= ... LCS <= multiset overlap, so ROUGE-L never exceeds token F1
    assert out["ROUGE-L"][0] <= out["TokenF1"][0] + 1e-12


# --- registry -------------------------------------------------------------------------------------


def test_registered_in_the_measure_registry() -> None:
    from rageval_core.metrics import registry
    from rageval_core.model import Chunk, Query

    for name in g.GENERATION_METRICS:
        spec = registry.parse(name).spec
        assert spec.family == "generation" and spec.input is g.AnswerInputs
        assert str(registry.parse(name)) == name
    assert str(registry.parse("RougeL")) == "ROUGE-L"
    qs = [
        Query(
            "q1",
            (Chunk("d1", "The Broncos won."),),
            query="Who won?",
            answer="Broncos",
            reference_answer="the Denver Broncos",
        ),
        Query("q2", None, answer="x"),
    ]
    inputs = g.answer_inputs_from_queries(qs)
    assert inputs.chunk_texts == [["The Broncos won."], None]
    got = registry.compute(["EM", "TokenF1", "SupportDensity"], inputs)
    assert list(got) == ["EM", "TokenF1", "SupportDensity"]
    np.testing.assert_array_equal(got["EM"], [0.0, np.nan])
    np.testing.assert_allclose(got["TokenF1"], [2 / 3, np.nan])
    np.testing.assert_array_equal(got["SupportDensity"], [1.0, np.nan])
