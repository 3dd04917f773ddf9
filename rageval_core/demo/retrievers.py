"""The demo's retrievers, written here on numpy: BM25, character n-gram TF-IDF, hybrid + rerank.

All three index the same chunk texts and return (chunk index, score) lists, best first; ties
are broken by chunk index so results are deterministic.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from itertools import pairwise
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

_WORD = re.compile(r"\d+(?:[.,]\d+)*|[a-z]+")
STOPWORDS = frozenset(
    {
        "a",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "been",
        "by",
        "can",
        "do",
        "does",
        "did",
        "for",
        "from",
        "had",
        "has",
        "have",
        "how",
        "i",
        "if",
        "in",
        "is",
        "it",
        "its",
        "me",
        "my",
        "of",
        "on",
        "or",
        "our",
        "per",
        "so",
        "than",
        "that",
        "the",
        "their",
        "them",
        "there",
        "these",
        "this",
        "to",
        "under",
        "up",
        "us",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "whose",
        "will",
        "with",
        "would",
        "you",
        "your",
    }
)

Hit = tuple[int, float]


def tokenize(text: str) -> list[str]:
    """Lower-case words and numbers ("$1,500" -> "1500", "4.25%" -> "4.25"), stopwords dropped."""
    return [t.replace(",", "") for t in _WORD.findall(text.lower()) if t not in STOPWORDS]


def stem(token: str) -> str:
    """A crude stem for the reranker: plural s dropped, then the first 6 characters."""
    if len(token) > 4 and token.endswith("s") and not token.endswith("ss"):
        token = token[:-1]
    return token[:6]


def top_k(scores: NDArray[np.float64], k: int) -> list[Hit]:
    """The k best (index, score) pairs with score > 0, by score then index."""
    candidates = np.flatnonzero(scores > 0)
    if candidates.size > k:
        # partial selection first, then an exact ordering of the few survivors
        cut = np.partition(scores[candidates], candidates.size - k)[candidates.size - k]
        candidates = candidates[scores[candidates] >= cut]
    order = np.lexsort((candidates, -scores[candidates]))[:k]
    return [(int(i), float(scores[i])) for i in candidates[order]]


class _Postings:
    """Term-major sparse matrix (CSR by term): term -> (chunk indices, weights)."""

    def __init__(self, rows: list[dict[int, float]], n_terms: int, n_docs: int) -> None:
        term_ids: list[int] = []
        doc_ids: list[int] = []
        weights: list[float] = []
        for d, row in enumerate(rows):
            term_ids.extend(row.keys())
            doc_ids.extend([d] * len(row))
            weights.extend(row.values())
        t = np.asarray(term_ids, dtype=np.int64)
        order = np.argsort(t, kind="stable")
        self.docs = np.asarray(doc_ids, dtype=np.int64)[order]
        self.weights = np.asarray(weights, dtype=np.float64)[order]
        self.indptr = np.zeros(n_terms + 1, dtype=np.int64)
        np.cumsum(np.bincount(t, minlength=n_terms), out=self.indptr[1:])
        self.n_docs = n_docs

    def df(self) -> NDArray[np.int64]:
        return np.diff(self.indptr)

    def dot(self, query: dict[int, float]) -> NDArray[np.float64]:
        """Scores of every document for a query given as term id -> query weight."""
        if not query:
            return np.zeros(self.n_docs)
        parts_d, parts_w = [], []
        for term, qw in query.items():
            lo, hi = self.indptr[term], self.indptr[term + 1]
            parts_d.append(self.docs[lo:hi])
            parts_w.append(self.weights[lo:hi] * qw)
        summed = np.bincount(
            np.concatenate(parts_d), weights=np.concatenate(parts_w), minlength=self.n_docs
        )
        return summed.astype(np.float64, copy=False)


class BM25:
    """Okapi BM25 over tokenize(); idf = ln(1 + (N - df + 0.5) / (df + 0.5)) (Lucene's)."""

    def __init__(self, texts: Sequence[str], k1: float = 1.2, b: float = 0.75) -> None:
        docs = [Counter(tokenize(t)) for t in texts]
        self.vocab: dict[str, int] = {}
        rows: list[dict[int, float]] = []
        for counts in docs:
            rows.append(
                {self.vocab.setdefault(w, len(self.vocab)): float(c) for w, c in counts.items()}
            )
        n = len(texts)
        lengths = np.array([sum(c.values()) for c in docs], dtype=np.float64)
        avgdl = float(lengths.mean()) if n else 0.0
        raw = _Postings(rows, len(self.vocab), n)
        df = raw.df().astype(np.float64)
        self.idf = np.log(1.0 + (n - df + 0.5) / (df + 0.5))
        # the whole BM25 term weight is query-independent, so it is precomputed per posting
        tf = raw.weights
        norm = k1 * (1.0 - b + b * lengths[raw.docs] / avgdl)
        term_of = np.repeat(np.arange(len(self.vocab)), np.diff(raw.indptr))
        raw.weights = self.idf[term_of] * tf * (k1 + 1.0) / (tf + norm)
        self.postings = raw

    def scores(self, query: str) -> NDArray[np.float64]:
        ids = {self.vocab[w] for w in tokenize(query) if w in self.vocab}
        return self.postings.dot(dict.fromkeys(ids, 1.0))

    def search(self, query: str, k: int) -> list[Hit]:
        return top_k(self.scores(query), k)


def char_normalise(text: str) -> str:
    """Lower case; digits keep their decimal points, other punctuation becomes space."""
    text = re.sub(r"(?<=\d),(?=\d)", "", text.lower())
    text = re.sub(r"(?<!\d)\.|\.(?!\d)", " ", text)
    text = re.sub(r"[^a-z0-9$%.]+", " ", text)
    return " " + " ".join(text.split()) + " "


def char_ngrams(text: str, low: int = 3, high: int = 5) -> Counter[str]:
    s = char_normalise(text)
    grams: Counter[str] = Counter()
    for n in range(low, high + 1):
        grams.update(s[i : i + n] for i in range(len(s) - n + 1))
    return grams


class CharTfidf:
    """Cosine similarity of character 3-5-gram TF-IDF vectors (sublinear tf, smooth idf, L2)."""

    def __init__(self, texts: Sequence[str], low: int = 3, high: int = 5) -> None:
        self.low, self.high = low, high
        self.vocab: dict[str, int] = {}
        rows: list[dict[int, float]] = []
        for t in texts:
            grams = char_ngrams(t, low, high)
            rows.append(
                {
                    self.vocab.setdefault(g, len(self.vocab)): 1.0 + math.log(c)
                    for g, c in grams.items()
                }
            )
        n = len(texts)
        raw = _Postings(rows, len(self.vocab), n)
        self.idf = np.log((1.0 + n) / (1.0 + raw.df())) + 1.0
        term_of = np.repeat(np.arange(len(self.vocab)), np.diff(raw.indptr))
        w = raw.weights * self.idf[term_of]
        norms = np.sqrt(np.bincount(raw.docs, weights=w * w, minlength=n))
        raw.weights = w / np.where(norms > 0, norms, 1.0)[raw.docs]
        self.postings = raw

    def scores(self, query: str) -> NDArray[np.float64]:
        q: dict[int, float] = {}
        for g, c in char_ngrams(query, self.low, self.high).items():
            i = self.vocab.get(g)
            if i is not None:
                q[i] = (1.0 + math.log(c)) * float(self.idf[i])
        norm = math.sqrt(sum(v * v for v in q.values()))
        return (
            self.postings.dot({i: v / norm for i, v in q.items()})
            if norm
            else np.zeros(self.postings.n_docs)
        )

    def search(self, query: str, k: int) -> list[Hit]:
        return top_k(self.scores(query), k)


def rrf(rankings: Sequence[Sequence[Hit]], k: int = 60, limit: int | None = None) -> list[Hit]:
    """Reciprocal rank fusion: score = sum over rankings of 1 / (k + rank), best first."""
    fused: dict[int, float] = {}
    for ranking in rankings:
        for rank, (i, _score) in enumerate(ranking, 1):
            fused[i] = fused.get(i, 0.0) + 1.0 / (k + rank)
    out = sorted(fused.items(), key=lambda t: (-t[1], t[0]))
    return out[:limit] if limit is not None else out


class Reranker:
    """A cheap cross-feature reranker over (query, chunk) pairs.

    Features: idf-weighted coverage of the query's stems by the chunk, numbers shared, query
    bigrams found as chunk bigrams, proximity (the tightest window holding the matched stems),
    and how well the query's names match the chunk's document title (plan, insurer, form,
    edition / company, year): chunks rarely repeat the name of the document they come from.
    The fused first-stage score is a tie-breaker.
    """

    WEIGHTS = {
        "coverage": 0.30,
        "numbers": 0.15,
        "bigrams": 0.10,
        "proximity": 0.10,
        "title": 0.25,
        "fused": 0.10,
    }

    def __init__(self, texts: Sequence[str], titles: Sequence[str]) -> None:
        self.chunk_stems = [[stem(t) for t in tokenize(x)] for x in texts]
        self.chunk_sets = [set(s) for s in self.chunk_stems]
        self.chunk_bigrams = [set(pairwise(s)) for s in self.chunk_stems]
        self.chunk_numbers = [{t for t in tokenize(x) if t[0].isdigit()} for x in texts]
        self.title_sets = [{stem(t) for t in tokenize(x)} for x in titles]
        df: Counter[str] = Counter()
        for s in self.chunk_sets:
            df.update(s)
        n = len(texts)
        self.idf = {t: math.log(1.0 + (n - c + 0.5) / (c + 0.5)) for t, c in df.items()}
        self.default_idf = math.log(1.0 + (n + 0.5) / 0.5)
        self.title_vocab = set().union(*self.title_sets) if self.title_sets else set()

    def rerank(self, query: str, candidates: Sequence[Hit], k: int) -> list[Hit]:
        if not candidates:
            return []
        tokens = tokenize(query)
        q_stems = [stem(t) for t in tokens]
        q_set = set(q_stems)
        q_numbers = {t for t in tokens if t[0].isdigit()}
        q_bigrams = set(pairwise(q_stems))
        weight = {t: self.idf.get(t, self.default_idf) for t in q_set}
        total = sum(weight.values()) or 1.0
        q_title = {t for t in q_set if t in self.title_vocab}
        title_total = sum(weight[t] for t in q_title)
        fused = np.array([s for _i, s in candidates])
        span = fused.max() - fused.min()
        fused_norm = (fused - fused.min()) / span if span > 0 else np.ones_like(fused)
        w = self.WEIGHTS
        scored: list[Hit] = []
        for (i, _s), f in zip(candidates, fused_norm, strict=True):
            matched = q_set & self.chunk_sets[i]
            coverage = sum(weight[t] for t in matched) / total
            numbers = len(q_numbers & self.chunk_numbers[i]) / len(q_numbers) if q_numbers else 0.0
            bigrams = len(q_bigrams & self.chunk_bigrams[i]) / len(q_bigrams) if q_bigrams else 0.0
            proximity = _proximity(self.chunk_stems[i], matched)
            title = (
                sum(weight[t] for t in q_title & self.title_sets[i]) / title_total
                if title_total
                else 0.0
            )
            score = (
                w["coverage"] * coverage
                + w["numbers"] * numbers
                + w["bigrams"] * bigrams
                + w["proximity"] * proximity
                + w["title"] * title
                + w["fused"] * float(f)
            )
            scored.append((i, score))
        scored.sort(key=lambda t: (-t[1], t[0]))
        return scored[:k]


def _proximity(stems: list[str], matched: set[str]) -> float:
    """len(matched) / the shortest window of stems that holds every matched stem (0 if < 2)."""
    if len(matched) < 2:
        return 0.0
    need = len(matched)
    have: Counter[str] = Counter()
    best = len(stems) + 1
    left = 0
    covered = 0
    for right, s in enumerate(stems):
        if s in matched:
            have[s] += 1
            if have[s] == 1:
                covered += 1
        while covered == need:
            best = min(best, right - left + 1)
            t = stems[left]
            if t in matched:
                have[t] -= 1
                if have[t] == 0:
                    covered -= 1
            left += 1
    return need / best if best <= len(stems) else 0.0
