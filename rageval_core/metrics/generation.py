"""Answer metrics, scored when a run has answers: EM, token F1, ROUGE-L, relevance, support,
and by meaning (AnswerSimilarity, ContextRelevance: metrics/semantic_answers.py).

Every metric works on SQuAD v1.1-normalised tokens (lowercase, ASCII punctuation removed, the
articles a/an/the removed, whitespace collapsed; the official evaluate-v1.1.py's
normalize_answer), so EM and TokenF1 equal that script's numbers. A score of NaN means "not
scored" (no answer, no reference, no chunk text ...) and is left out of every mean; the exact
cases are in docs/metrics.md ("Answer metrics") and in each function's docstring.

The metrics are registered in metrics.registry at import (family "generation", input
AnswerInputs), so ``compute(["EM", "ROUGE-L"], AnswerInputs(...))`` works like ranking measures.
ROUGE-L is also accepted as ROUGE_L or RougeL.
"""

from __future__ import annotations

import math
import re
import string
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rageval_core.metrics.registry import KINDS, MeasureSpec, register
from rageval_core.metrics.semantic_answers import (
    answer_similarity,
    best_context_relevance,
    context_relevance,
    semantic_answer_scores,
)
from rageval_core.model import Query

NAN = math.nan

#: A reference answer: one string, or several acceptable ones (the best match counts, as SQuAD).
Reference = str | Sequence[str] | None

#: Small English stopword list for SupportCoverage; "content words" are the tokens not in it.
#: Articles are already gone after normalisation; listed anyway so the list stands on its own.
# fmt: off
STOPWORDS = frozenset(
    {
        "a", "an", "the", "and", "or", "but", "if", "then", "else", "of", "to", "in", "on", "at",
        "by", "for", "with", "from", "into", "onto", "over", "under", "about", "as", "than", "so",
        "too", "very", "not", "no", "nor", "is", "am", "are", "was", "were", "be", "been", "being",
        "has", "have", "had", "having", "do", "does", "did", "doing", "will", "would", "shall",
        "should", "can", "could", "may", "might", "must", "it", "its", "itself", "this", "that",
        "these", "those", "there", "here", "which", "who", "whom", "whose", "what", "when", "where",
        "why", "how", "i", "me", "my", "mine", "we", "us", "our", "ours", "you", "your", "yours",
        "he", "him", "his", "she", "her", "hers", "they", "them", "their", "theirs", "s", "t",
        "just", "also", "only", "such", "some", "any", "all", "both", "each", "few", "more", "most",
        "other", "same", "own", "again", "further", "once", "up", "down", "out", "off",
    }
)
# fmt: on

_PUNCTUATION = str.maketrans("", "", string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(text: str) -> str:
    """SQuAD v1.1 normalisation: lower, drop punctuation, drop a/an/the, collapse whitespace."""
    # Same steps, same order as the official script; translate() is its char filter, faster.
    return " ".join(_ARTICLES.sub(" ", text.lower().translate(_PUNCTUATION)).split())


def tokens(text: str) -> list[str]:
    """The SQuAD-normalised tokens of text."""
    return normalize_answer(text).split()


def token_set(text: str) -> frozenset[str]:
    """frozenset(tokens(text)), without running the article pattern over the whole text.

    Whitespace is never a word character, so no match of ``\\b(a|an|the)\\b`` spans two
    whitespace-separated words, and a word's boundaries are the same alone as inside the text:
    normalising word by word gives the same tokens. A word made only of word characters
    (isalnum) can match only as a whole ("a", "an", "the"); the pattern runs on the others only.
    That skips the regex scan of long chunk texts, the slowest part of the support metrics.
    """
    split = text.lower().translate(_PUNCTUATION).split()
    if "".join(split).isalnum():  # the common case: one C-level check for every word at once
        return frozenset(split).difference(_ARTICLE_WORDS)
    words = set(split)
    plain = set(filter(str.isalnum, words))
    out = plain - _ARTICLE_WORDS
    for word in words - plain:
        out.update(_ARTICLES.sub(" ", word).split())
    return frozenset(out)


_ARTICLE_WORDS = frozenset({"a", "an", "the"})


def _overlap(pred: Sequence[str], gold: Sequence[str]) -> int:
    """sum(min(count in pred, count in gold)) over tokens: the size of Counter(pred) & Counter(gold)."""
    left: dict[str, int] = {}
    for w in gold:
        left[w] = left.get(w, 0) + 1
    same = 0
    for w in pred:
        n = left.get(w)
        if n:
            same += 1
            left[w] = n - 1
    return same


def _references(reference: Reference) -> list[str] | None:
    if reference is None:
        return None
    if isinstance(reference, str):
        return [reference]
    refs = [r for r in reference if r is not None]
    return refs or None


def exact_match(answer: str | None, reference: Reference) -> float:
    """EM: 1.0 when the normalised answer equals a normalised reference, else 0.0.

    NaN when answer or reference is None (not scored). A reference that normalises to empty
    matches only an answer that also normalises to empty (SQuAD v2.0's rule for no-answer).
    """
    refs = _references(reference)
    if answer is None or refs is None:
        return NAN
    a = normalize_answer(answer)
    return float(any(a == normalize_answer(r) for r in refs))


def _f1(pred: Sequence[str], gold: Sequence[str]) -> float:
    """SQuAD token F1 of two token lists; both empty = 1.0, one empty = 0.0 (SQuAD v2.0)."""
    if not pred or not gold:
        return float(not pred and not gold)
    return _f_measure(_overlap(pred, gold), len(pred), len(gold))


def _f_measure(common: int, n_pred: int, n_gold: int) -> float:
    """F1 = 2PR/(P+R), P = common/n_pred, R = common/n_gold (both > 0); 0.0 when common = 0."""
    if common == 0:
        return 0.0
    precision = common / n_pred
    recall = common / n_gold
    return 2 * precision * recall / (precision + recall)


def token_f1(answer: str | None, reference: Reference) -> float:
    """SQuAD token F1 = 2PR/(P+R) over the multiset of normalised tokens (max over references).

    NaN when answer or reference is None; when either normalises to no tokens, 1.0 if both do
    and 0.0 otherwise (SQuAD v2.0; v1.1 never has an empty reference).
    """
    refs = _references(reference)
    if answer is None or refs is None:
        return NAN
    pred = tokens(answer)
    return max(_f1(pred, tokens(r)) for r in refs)


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence of two token sequences (no length cap).

    Bit-parallel DP (Allison & Dix 1986; Hyyroe 2004): one big-int row of the classic table per
    token of a, so O(len(a) * len(b) / 64) word operations instead of a Python loop per cell.
    """
    if len(a) < len(b):
        a, b = b, a  # the shorter sequence is the bit row, the longer the loop
    if not b:
        return 0
    match: dict[str, int] = {}
    for j, tok in enumerate(b):
        match[tok] = match.get(tok, 0) | (1 << j)
    full = (1 << len(b)) - 1
    row = full  # a 1 bit is a column where the LCS has not grown yet
    for tok in a:
        u = row & match.get(tok, 0)
        row = ((row + u) | (row - u)) & full
    return len(b) - row.bit_count()


def _rouge_l(pred: Sequence[str], gold: Sequence[str]) -> float:
    if not pred or not gold:
        return float(not pred and not gold)
    # beta = 1: precision and recall weigh the same (rouge-score's fmeasure), not ROUGE-1.5.5's
    # recall-leaning beta, because a long padded answer should not score as well as a tight one.
    return _f_measure(lcs_length(pred, gold), len(pred), len(gold))


def rouge_l(answer: str | None, reference: Reference) -> float:
    """ROUGE-L F1 (beta = 1): P = LCS/len(answer), R = LCS/len(reference), F = 2PR/(P+R).

    Tokens are SQuAD-normalised; the best reference counts. None and empty cases as token_f1.
    """
    refs = _references(reference)
    if answer is None or refs is None:
        return NAN
    pred = tokens(answer)
    return max(_rouge_l(pred, tokens(r)) for r in refs)


def answer_relevance(answer: str | None, query: str | None) -> float:
    """Token F1 of the answer against the query text: a cheap proxy for "answers the question".

    NaN when answer or query is None; empty cases as token_f1.
    """
    if answer is None or query is None:
        return NAN
    return _f1(tokens(answer), tokens(query))


#: distinct chunk texts whose tokens one generation_scores call keeps at a time
_SEEN_CAP = 100_000


def _chunk_vocabulary(
    chunk_texts: Sequence[str | None] | None, seen: dict[str, frozenset[str]] | None = None
) -> set[str] | None:
    """The normalised tokens of the chunks that have text; None when no chunk has text.

    seen caches each distinct chunk text's tokens across queries (a corpus's chunks come back
    for many queries), so every text is normalised once per batch.
    """
    if chunk_texts is None:
        return None
    texts = [t for t in chunk_texts if t is not None]
    if chunk_texts and not texts:
        return None  # chunks were retrieved but their text is unknown: cannot judge support
    if seen is None:
        return set().union(*map(token_set, texts))
    sets = []
    for t in texts:
        words = seen.get(t)
        if words is None:
            if len(seen) >= _SEEN_CAP:  # bounded: a run of unique chunks must not grow it forever
                seen.clear()
            words = seen[t] = token_set(t)
        sets.append(words)
    return set().union(*sets)


def _share_found(words: Sequence[str], vocab: set[str] | None) -> float:
    if vocab is None or not words:
        return NAN
    return sum(w in vocab for w in words) / len(words)


def support_coverage(answer: str | None, chunk_texts: Sequence[str | None] | None) -> float:
    """Share of the answer's content-word tokens (not in STOPWORDS) that occur in the chunks.

    Counted per token occurrence. NaN when the answer is None, has no content word, or no chunk
    text is known (chunk_texts None, or every chunk's text None); an empty chunk list gives 0.
    """
    if answer is None:
        return NAN
    content = [t for t in tokens(answer) if t not in STOPWORDS]
    return _share_found(content, _chunk_vocabulary(chunk_texts))


def support_density(answer: str | None, chunk_texts: Sequence[str | None] | None) -> float:
    """Share of all the answer's tokens (stopwords included) that occur in the chunks.

    NaN when the answer is None or normalises to no tokens, or no chunk text is known.
    """
    if answer is None:
        return NAN
    return _share_found(tokens(answer), _chunk_vocabulary(chunk_texts))


def hallucination_rate(answer: str | None, chunk_texts: Sequence[str | None] | None) -> float:
    """1 - SupportDensity: share of answer tokens found in no retrieved chunk (NaN likewise)."""
    return 1.0 - support_density(answer, chunk_texts)


@dataclass(frozen=True, slots=True)
class GenerationMetric:
    """An answer metric: its name, what it compares, and whether higher is better."""

    name: str
    description: str
    #: the input besides the answer: "reference", "query", "chunks" or "query_chunks" (the
    #: pair (query, chunks))
    needs: str
    higher_is_better: bool
    score: Callable[..., float]
    kind: str = "lexical"  # "semantic": embedding cosines (metrics/semantic_answers.py)


#: Answer metrics by name, in display order; each is also registered in metrics.registry below.
GENERATION_METRICS: dict[str, GenerationMetric] = {
    m.name: m
    for m in (
        GenerationMetric(
            "EM", "exact match after SQuAD normalisation", "reference", True, exact_match
        ),
        GenerationMetric("TokenF1", "SQuAD token F1 vs the reference", "reference", True, token_f1),
        GenerationMetric(
            "ROUGE-L", "LCS F1 (beta = 1) vs the reference", "reference", True, rouge_l
        ),
        GenerationMetric(
            "AnswerRelevance", "token F1 of answer vs query", "query", True, answer_relevance
        ),
        GenerationMetric(
            "SupportCoverage",
            "share of content words in the chunks",
            "chunks",
            True,
            support_coverage,
        ),
        GenerationMetric(
            "SupportDensity",
            "share of answer tokens in the chunks",
            "chunks",
            True,
            support_density,
        ),
        GenerationMetric(
            "HallucinationRate",
            "share of answer tokens in no chunk",
            "chunks",
            False,
            hallucination_rate,
        ),
        GenerationMetric(
            "AnswerSimilarity",
            "embedding cosine of answer and reference (offline embedder)",
            "reference",
            True,
            answer_similarity,
            kind="semantic",
        ),
        GenerationMetric(
            "ContextRelevance",
            "mean embedding cosine of the query and each retrieved chunk",
            "query_chunks",
            True,
            context_relevance,
            kind="semantic",
        ),
        GenerationMetric(
            "BestContextRelevance",
            "best embedding cosine of the query and a retrieved chunk",
            "query_chunks",
            True,
            best_context_relevance,
            kind="semantic",
        ),
    )
}


def generation_scores(
    answers: Sequence[str | None],
    references: Sequence[Reference],
    queries: Sequence[str | None],
    chunk_texts_per_query: Sequence[Sequence[str | None] | None],
) -> dict[str, NDArray[np.float64]]:
    """Every answer metric for every query: {name: float64 array, NaN = not scored}.

    The four sequences are parallel (one entry per query). Each text is normalised once per
    query, not once per metric.
    """
    n = len(answers)
    inputs = {"references": references, "queries": queries, "chunk_texts": chunk_texts_per_query}
    for name, seq in inputs.items():
        if len(seq) != n:
            raise ValueError(f"{name} has {len(seq)} entries, answers has {n}")
    out = {name: np.full(n, np.nan) for name in GENERATION_METRICS}
    seen: dict[str, frozenset[str]] = {}
    for i in range(n):
        answer = answers[i]
        if answer is None:
            continue  # no answer: every answer metric is "not scored"
        pred = tokens(answer)
        refs = _references(references[i])
        if refs is not None:
            gold = [tokens(r) for r in refs]
            norm = " ".join(pred)
            out["EM"][i] = float(any(norm == " ".join(g) for g in gold))
            out["TokenF1"][i] = max(_f1(pred, g) for g in gold)
            out["ROUGE-L"][i] = max(_rouge_l(pred, g) for g in gold)
        query = queries[i]
        if query is not None:
            out["AnswerRelevance"][i] = _f1(pred, tokens(query))
        vocab = _chunk_vocabulary(chunk_texts_per_query[i], seen)
        content = [t for t in pred if t not in STOPWORDS]
        out["SupportCoverage"][i] = _share_found(content, vocab)
        density = _share_found(pred, vocab)
        out["SupportDensity"][i] = density
        out["HallucinationRate"][i] = 1.0 - density
    # the metrics by meaning embed every text of the block in one batch
    out.update(semantic_answer_scores(answers, references, queries, chunk_texts_per_query))
    return out


@dataclass
class AnswerInputs:
    """The per-query texts answer metrics read (parallel sequences); scored once, on first use."""

    answers: Sequence[str | None]
    references: Sequence[Reference]
    queries: Sequence[str | None]
    chunk_texts: Sequence[Sequence[str | None] | None]
    _scores: dict[str, NDArray[np.float64]] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    @classmethod
    def from_scores(cls, scores: Mapping[str, NDArray[np.float64]]) -> AnswerInputs:
        """Inputs whose metrics were computed before (kept in the store): the texts are left empty.

        scores holds every metric of GENERATION_METRICS, one value per query (NaN: not scored).
        """
        missing = [name for name in GENERATION_METRICS if name not in scores]
        if missing:
            raise ValueError(f"kept answer scores lack {', '.join(missing)}")
        inputs = cls(answers=[], references=[], queries=[], chunk_texts=[])
        inputs._scores = {
            name: np.asarray(scores[name], dtype=np.float64) for name in GENERATION_METRICS
        }
        return inputs

    def scores(self) -> dict[str, NDArray[np.float64]]:
        """generation_scores of these inputs, computed once (every registered metric reads it)."""
        if self._scores is None:
            self._scores = generation_scores(
                self.answers, self.references, self.queries, self.chunk_texts
            )
        return self._scores


def answer_inputs_from_queries(queries: Iterable[Query]) -> AnswerInputs:
    """AnswerInputs from model Queries; a query absent from the run has chunk_texts None."""
    qs = list(queries)
    return AnswerInputs(
        answers=[q.answer for q in qs],
        references=[q.reference_answer for q in qs],
        queries=[q.query for q in qs],
        chunk_texts=[None if q.retrieved is None else [c.text for c in q.retrieved] for q in qs],
    )


def _registered_fn(
    name: str,
) -> Callable[[Any, int | None, Mapping[str, Any]], NDArray[np.float64]]:
    def fn(
        data: AnswerInputs, cutoff: int | None, params: Mapping[str, Any]
    ) -> NDArray[np.float64]:
        return data.scores()[name].copy()

    return fn


for _metric in GENERATION_METRICS.values():
    register(
        MeasureSpec(
            name=_metric.name,
            family="generation",
            needs_cutoff=False,
            allows_cutoff=False,
            fn=_registered_fn(_metric.name),
            description=_metric.description,
            range=(0.0, 1.0),
            input=AnswerInputs,
            aliases=("ROUGE_L", "RougeL") if _metric.name == "ROUGE-L" else (),
            higher_is_better=_metric.higher_is_better,
            kind_of=KINDS["semantic"] if _metric.kind == "semantic" else None,
        )
    )
