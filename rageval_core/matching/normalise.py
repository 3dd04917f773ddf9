"""Text normalisation with offset maps, the first step of evidence matching (matching.py).

Normalisation (in this order, as SQuAD's ``normalize_answer``): lowercase (str.lower); with
strip_punct, drop punctuation characters (Python's string.punctuation plus every Unicode
category P* character; "don't" -> "dont"); with strip_articles, drop the words a, an, the
(regex ``\\b(a|an|the)\\b``); finally collapse every run of whitespace (str.isspace) to one space
and trim both ends. An offset map gives, for each normalised character, the index of the
original character it came from, so a window found in normalised text maps back to the
original text.
"""

from __future__ import annotations

import functools
import re
import string
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from rageval_core.errors import UsageError


#: Version of the normalisation rules; part of Normalisation.key, so caches built under older
#: rules are never reused.
NORMALISATION_VERSION = 1

#: Distinct chunk text handled per block (characters): bounds the offset maps held in memory.
BLOCK_CHARS = 16_000_000

_SEP = "\x00"  # joins texts in a normalisation batch; NULs inside texts are read as spaces
_N_CODEPOINTS = 0x110000


@dataclass(frozen=True, slots=True)
class Normalisation:
    """How texts are normalised before matching (lowercase and whitespace collapse always)."""

    strip_punct: bool = False
    strip_articles: bool = False

    @property
    def key(self) -> str:
        """A stable short string for cache keys, e.g. 'v1', 'v1+punct+articles'."""
        parts = [f"v{NORMALISATION_VERSION}"]
        if self.strip_punct:
            parts.append("punct")
        if self.strip_articles:
            parts.append("articles")
        return "+".join(parts)

    @classmethod
    def from_key(cls, key: str) -> Normalisation:
        """The Normalisation whose key is `key`; UsageError for anything else."""
        parts = key.split("+")
        flags = set(parts[1:])
        norm = cls(strip_punct="punct" in flags, strip_articles="articles" in flags)
        if norm.key != key:
            raise UsageError(
                f"unknown normalisation key {key!r} (expected e.g. {cls().key!r} "
                f"or {cls(True, True).key!r})"
            )
        return norm


@functools.cache
def _class_table(pattern: str) -> NDArray[np.bool_]:
    """Code point -> whether the one-character regex pattern (of str patterns) matches it."""
    table = np.zeros(_N_CODEPOINTS, dtype=np.bool_)
    every = "".join(map(chr, range(_N_CODEPOINTS)))
    table[[m.start() for m in re.finditer(pattern, every)]] = True
    return table


def _space_table() -> NDArray[np.bool_]:
    """Code point -> str.isspace(); the regex \\s of str patterns is the same set."""
    return _class_table(r"\s")


def _word_table() -> NDArray[np.bool_]:
    """Code point -> word character as the regex \\w of str patterns sees it."""
    return _class_table(r"\w")


@functools.cache
def _punct_table() -> NDArray[np.bool_]:
    """Code point -> punctuation: ASCII string.punctuation (as SQuAD) or Unicode category P*."""
    table = np.zeros(_N_CODEPOINTS, dtype=np.bool_)
    category = unicodedata.category
    table[[c for c in range(_N_CODEPOINTS) if category(chr(c))[0] == "P"]] = True
    table[[ord(c) for c in string.punctuation]] = True
    return table


def _lower_with_map(text: str) -> tuple[str, NDArray[np.int32] | None]:
    """text.lower() plus an index map when lowercasing changed the length (None = identity)."""
    lowered = text.lower()
    if len(lowered) == len(text):  # lower() never shrinks a character, so this is 1:1
        return lowered, None
    # Some characters expand (e.g. 'İ' -> 'i̇'): repeat each index by its own expansion.
    widths = np.fromiter((len(ch.lower()) for ch in text), dtype=np.int32, count=len(text))
    if int(widths.sum()) != len(lowered):  # context rules changed a length: lower per character
        lowered = "".join(ch.lower() for ch in text)
    return lowered, np.repeat(np.arange(len(text), dtype=np.int32), widths)


def _codepoints(text: str) -> NDArray[np.uint32]:
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


def _from_codepoints(cp: NDArray[np.uint32]) -> str:
    return cp.astype(np.uint32, copy=False).tobytes().decode("utf-32-le", "surrogatepass")


def _article_mask(cp: NDArray[np.uint32]) -> NDArray[np.bool_]:
    """Characters of the words a, an, the: what re.sub(r"\\b(a|an|the)\\b", ...) would hit."""
    n = cp.size
    padded = np.concatenate((cp, np.zeros(3, dtype=np.uint32)))
    word = np.zeros(n + 4, dtype=np.bool_)  # word[i + 1]: is character i a word character
    word[1 : n + 1] = _word_table()[cp]
    pos = np.flatnonzero((cp == ord("a")) | (cp == ord("t")))
    pos = pos[~word[pos]]  # starts a word
    a = pos[cp[pos] == ord("a")]
    t = pos[cp[pos] == ord("t")]
    mask = np.zeros(n + 3, dtype=np.bool_)
    mask[a[~word[a + 2]]] = True
    an = a[(padded[a + 1] == ord("n")) & ~word[a + 3]]
    the = t[(padded[t + 1] == ord("h")) & (padded[t + 2] == ord("e")) & ~word[t + 4]]
    for start, width in ((an, 2), (the, 3)):
        for j in range(width):
            mask[start + j] = True
    return mask[:n]


def normalise_many(
    texts: Sequence[str], norm: Normalisation = Normalisation()
) -> list[tuple[str, NDArray[np.int32]]]:
    """normalise() every text in one vectorised pass: [(normalised, offset_map), ...]."""
    normalised, maps = _normalise_texts(texts, norm)
    return [
        (text, np.arange(m, m + len(text), dtype=np.int32) if isinstance(m, int) else m)
        for text, m in zip(normalised, maps, strict=True)
    ]


#: an offset map, or the shift of one that is a plain range (normalised i -> original i + shift)
OffsetMap = NDArray[np.int32] | int


def _normalise_texts(
    texts: Sequence[str], norm: Normalisation
) -> tuple[list[str], list[OffsetMap]]:
    """Normalised texts and their offset maps (an int: the map is i -> i + that shift).

    A text that default normalisation only lowercases, and trims of the spaces at its ends
    (see _plain_shifts), skips the per-character pass: most chunks of clean text.
    """
    if not all(issubclass(kind, str) for kind in set(map(type, texts))):
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise UsageError(f"text {i} is {type(text).__name__}, expected str")
    if not texts:
        return [], []
    if norm.strip_punct or norm.strip_articles:
        done = _normalise_arrays(texts, norm)
        return [t for t, _ in done], [m for _, m in done]
    lowered = list(map(str.lower, texts))
    shifts = _plain_shifts(texts, lowered)
    # str.strip gives the same object back when there is nothing to strip
    normalised = [low.strip(" ") for low in lowered]
    maps: list[OffsetMap] = shifts.tolist()
    dirty = np.flatnonzero(shifts < 0).tolist()
    if dirty:
        for i, (text, m) in zip(
            dirty, _normalise_arrays([texts[i] for i in dirty], norm), strict=True
        ):
            normalised[i], maps[i] = text, m
    return normalised, maps


def _plain_shifts(texts: Sequence[str], lowered: list[str]) -> NDArray[np.int64]:
    """Per text, where default normalisation is text.lower() less its edge spaces: their count
    at the start (the map is then i -> i + that); -1 where it is not.

    It is exactly that when lowercasing keeps the length (each character maps to one) and,
    spaces at either end left out, the lowercase text holds no NUL and no whitespace but
    single spaces between other characters: nothing else is dropped or replaced. ASCII texts
    are checked together on their bytes (ASCII whitespace and NUL are all below 33; any other
    control character also sends its text to the full pass, which is merely slower); others
    with str.split, whose whitespace is str.isspace, the set _space_table holds.
    """
    shifts = np.full(len(texts), -1, dtype=np.int64)
    is_ascii = np.fromiter(map(str.isascii, texts), dtype=np.bool_, count=len(texts))
    ids = np.flatnonzero(is_ascii)
    if ids.size:
        parts = [lowered[i] for i in ids.tolist()] if ids.size < len(texts) else lowered
        lengths = np.fromiter(map(len, parts), dtype=np.int64, count=len(parts))
        ends = np.cumsum(lengths)
        data = np.frombuffer("".join(parts).encode("ascii"), dtype=np.uint8)
        plain = np.ones(len(parts), dtype=np.bool_)
        plain[np.searchsorted(ends, np.flatnonzero(data < 32), side="right")] = False
        shifts[ids[plain]] = 0
        # Texts with a space at an end, or two spaces in a row (the text of the first one
        # holds both, or ends with a space): trim the ends' spaces, then look again.
        space = data == 32
        full = np.flatnonzero(lengths > 0)
        edgy = np.zeros(len(parts), dtype=np.bool_)
        edgy[full[space[ends[full] - lengths[full]] | space[ends[full] - 1]]] = True
        edgy[np.searchsorted(ends, np.flatnonzero(space[1:] & space[:-1]), side="right")] = True
        look = np.flatnonzero(plain & edgy)
        shifts[ids[look]] = [
            len(low) - len(low.lstrip(" ")) if "  " not in low.strip(" ") else -1
            for low in map(parts.__getitem__, look.tolist())
        ]
    if ids.size < len(texts):
        for i, (text, low) in enumerate(zip(texts, lowered, strict=True)):
            if not text.isascii() and len(low) == len(text) and _SEP not in low:
                core = low.strip(" ")
                if " ".join(core.split()) == core:
                    shifts[i] = len(low) - len(low.lstrip(" "))
    return shifts


def _normalise_arrays(
    texts: Sequence[str], norm: Normalisation
) -> list[tuple[str, NDArray[np.int32]]]:
    """The per-character pass over every text at once (numpy over code points)."""
    lowered: list[str] = []
    special: dict[int, NDArray[np.int32]] = {}
    for i, text in enumerate(texts):
        low, index = _lower_with_map(text)
        if index is not None:
            special[i] = index
        lowered.append(low.replace(_SEP, " ") if _SEP in low else low)

    lengths = np.fromiter(map(len, lowered), dtype=np.int32, count=len(lowered))
    starts = np.cumsum(lengths + 1, dtype=np.int64) - (lengths + 1)  # text starts in the batch
    cp = _codepoints(_SEP.join(lowered))
    # Original index of each batch character: its position within its own text.
    idx = np.arange(cp.size, dtype=np.int32)
    idx -= np.repeat(starts.astype(np.int32), lengths + 1)[: cp.size]
    for i, index in special.items():
        idx[starts[i] : starts[i] + lengths[i]] = index

    if norm.strip_punct:
        keep = ~_punct_table()[cp]
        cp, idx = cp[keep], idx[keep]
    space = _space_table()[cp]
    if norm.strip_articles:
        space |= _article_mask(cp)  # an article becomes whitespace, then collapses away
    # A whitespace character survives only as the first of its run ...
    keep = np.ones(cp.size, dtype=np.bool_)
    np.logical_not(space[1:] & space[:-1], out=keep[1:])
    cp, idx, space = cp[keep], idx[keep], space[keep]
    # ... and not at either end of its text.
    sep = cp == 0
    edge = np.ones(cp.size, dtype=np.bool_)  # first and last character of the batch
    edge[1:-1] = sep[:-2] | sep[2:]
    keep = ~(space & edge)
    cp, idx, space = cp[keep], idx[keep], space[keep]
    cp[space] = 32

    pieces = _from_codepoints(cp).split(_SEP)
    bounds = np.cumsum(np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces)))
    idx = idx[cp != 0]
    maps = [idx[b - len(p) : b] for p, b in zip(pieces, bounds.tolist(), strict=True)]
    return list(zip(pieces, maps, strict=True))


def normalise(text: str, norm: Normalisation = Normalisation()) -> tuple[str, NDArray[np.int32]]:
    """Normalise one text; offset_map[i] is the original index of normalised character i."""
    return normalise_many([text], norm)[0]


def to_original(offset_map: NDArray[np.int32], start: int, end: int) -> tuple[int, int]:
    """Map a window [start, end) of normalised text to [start, end) of the original text.

    The original window runs from the first to the last original character that produced the
    window, so whitespace or punctuation removed inside it is included. (-1, -1) when empty.
    """
    if not 0 <= start < end <= len(offset_map):
        return -1, -1
    return int(offset_map[start]), int(offset_map[end - 1]) + 1
