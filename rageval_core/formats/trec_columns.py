"""TREC run and qrels files parsed with numpy, for `rageval evaluate` straight from the files.

The fastest of the TREC reader's routes (formats/trec.py has the line reader and the DuckDB
route), and the only one that imports nothing but numpy (and formats/base.py, which gunzips a
.gz file): the file is read in blocks of whole
lines whose bytes are split on their separators with vectorised numpy; query ids are coded in
order of first appearance, rows are sorted as trec_eval sorts them (score descending, ties by
docno descending: only tie groups are sorted by docno) and qrels labels are joined on 64-bit
(query, docno) keys. No Python object per line. It also holds the format's sniffer and number
patterns, which formats/trec.py imports from here.

It accepts only files it can prove well-formed, and returns None for anything else, so that
the line reader reads it and names each problem at its line (file:line: field: problem):
- printable ASCII (no "\r"), one row per line, fields split by exactly one space or tab, no
  blank or '#' comment lines, exactly 6 (run) or 4 (qrels) fields per line, each field at most
  255 bytes;
- every score a C-style decimal number, finite (numpy's bytes-to-float cast agrees with the
  line reader's pattern on these characters: tests/core/formats/test_trec_columns.py);
  every qrels label an integer in 32-bit range;
- one run tag throughout (a mixed tag is a warning the line reader gives);
- no document twice in a query of the run, no judgement twice in the qrels. A 64-bit key
  collision can only send a clean file the slow way, never the reverse: joined labels are
  checked against the actual strings.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rageval_core.formats.base import GZIP_ERRORS, open_bytes

FORMAT = "trec"
PRIMARY = "run"
COMPANION: str | None = "qrels"

_ITER_TOKENS = {"Q0", "q0", "0"}
# C-style decimal numbers only: Python's float() would also take "1_0", "nan" and "inf"
_NUMBER = re.compile(r"^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$")
_INTEGER = re.compile(r"^[+-]?[0-9]+$")
#: bytes a clean file may hold: printable ASCII, space, tab and newline
_CLEAN = bytes(range(0x20, 0x7F)) + b"\t\n"
#: longest field the fast route takes (longer ones are read by the line reader)
_MAX_WIDTH = 255
#: bytes read per block
_BLOCK_BYTES = 1 << 18
#: bytes past a block's end that word reads may touch (a field's last word), never looked at
_SLACK = _MAX_WIDTH + 257
#: the low k bytes of a little-endian word, k = 0..8
_LOW_BYTES = np.array([(1 << 8 * k) - 1 for k in range(9)], dtype="<u8")
_SCORE_CHARS = np.zeros(256, dtype=bool)
_SCORE_CHARS[list(b"0123456789.eE+-")] = True
_SCORE_CHARS_OR_PAD = _SCORE_CHARS.copy()
_SCORE_CHARS_OR_PAD[0] = True
_ONE = np.uint64(1)
_EIGHT = np.uint64(8)
#: the digits of a word, first in the lowest byte, combined in pairs, fours, then eights
_SWAR_STEPS = [
    (np.uint64(10), np.uint64(8), np.uint64(0x00FF00FF00FF00FF)),
    (np.uint64(100), np.uint64(16), np.uint64(0x0000FFFF0000FFFF)),
    (np.uint64(10000), np.uint64(32), np.uint64(0x00000000FFFFFFFF)),
]
_POWERS_OF_TEN = 10.0 ** np.arange(9)
_DIGITS = np.zeros(256, dtype=bool)
_DIGITS[list(b"0123456789")] = True
_SIGNS = np.zeros(256, dtype=bool)
_SIGNS[list(b"+-")] = True
_MIX = np.uint64(0x9E3779B97F4A7C15)  # odd 64-bit constant: multiply-and-add hashing
_INT32 = 2**31

Ints = NDArray[np.int64]


class _NotClean(Exception):
    """The file is not one this route vouches for: the line reader reads it."""


@dataclass(frozen=True, slots=True)
class _Fields:
    """A block of whole lines (with _SLACK bytes after the end) and where its lines and
    separators are."""

    data: NDArray[np.uint8]
    seps: Ints  # (n_lines, n_fields - 1): offset of each separator
    line_starts: Ints
    line_ends: Ints  # offset of each line's newline

    @property
    def n_rows(self) -> int:
        return int(self.line_starts.size)

    def bounds(self, column: int) -> tuple[Ints, Ints]:
        start = self.line_starts if column == 0 else self.seps[:, column - 1] + 1
        end = self.line_ends if column == self.seps.shape[1] else self.seps[:, column]
        return start, end

    def strings(self, column: int) -> NDArray[np.bytes_]:
        """Column's fields as byte strings of whole 8-byte words, zero after each field's end.

        Read a word at a time at each field's offset, the bytes past its end masked off: a few
        whole-column operations per 8 bytes of width, where a byte matrix needs a mask as
        large as itself."""
        start, end = self.bounds(column)
        lengths = end - start
        width = int(lengths.max())
        if width > _MAX_WIDTH:
            raise _NotClean
        words = -(-width // 8)
        # every offset of the buffer as the start of a little-endian word (a view, no copy)
        at = np.ndarray(shape=(self.data.size - 7,), dtype="<u8", buffer=self.data, strides=(1,))
        out = np.empty((start.size, words), dtype="<u8")
        uniform = int(lengths.min()) == width  # one mask per word (ids and tags often are)
        for j in range(words):
            if uniform:
                mask: Any = _LOW_BYTES[min(max(width - 8 * j, 0), 8)]
            else:
                mask = _LOW_BYTES[np.clip(lengths - 8 * j, 0, 8) if words > 1 else lengths]
            np.bitwise_and(at[start + 8 * j if j else start], mask, out=out[:, j])
        strings: NDArray[np.bytes_] = out.view(f"S{8 * words}").ravel()
        return strings

    def matrix(self, column: int) -> NDArray[np.uint8]:
        """Column's bytes as an (n_rows, width) matrix, zero after each field's end (width a
        multiple of 8)."""
        return self.strings(column).view(np.uint8).reshape(self.n_rows, -1)


@dataclass(frozen=True, slots=True)
class TrecArrays:
    """A clean run and qrels as arrays: every query, the run's rows in trec_eval's order
    (query, score descending, docno descending) with their labels, and the judgements."""

    query_ids: list[str]  # the run's in order of first line, then judged-only ones (qrels order)
    in_run: NDArray[np.bool_]  # per query
    has_qrels: NDArray[np.bool_]  # per query
    ret_query: Ints  # per run row: index into query_ids, non-decreasing
    ret_rank: Ints  # per run row: 1-based, its place in its query
    ret_label: NDArray[np.int32]  # per run row: its judgement, 0 when unjudged
    ret_judged: NDArray[np.int8]  # per run row: JUDGED, POOLED or NOT_IN_QRELS (arrays.py)
    judged_query: Ints  # per qrels line
    judged_label: NDArray[np.int32]
    tag: str


@dataclass(frozen=True, slots=True)
class _Run:
    uniq: NDArray[np.bytes_]  # query ids, sorted
    code: Ints  # per uniq: index in order of first line
    qidx: Ints  # per row (sorted rows)
    docno: NDArray[np.bytes_]  # per row (sorted rows)
    tag: str


@dataclass(frozen=True, slots=True)
class _Qrels:
    qid: NDArray[np.bytes_]
    docno: NDArray[np.bytes_]
    rel: NDArray[np.int32]


def sniff(path: Path, head: bytes) -> str | None:
    """'run' or 'qrels' when the first content line looks like one, else None."""
    if b"\x00" in head:
        return None
    text = head.decode("utf-8", errors="replace")
    for line in text.splitlines():
        tokens = line.split()
        if not tokens or tokens[0].startswith("#"):
            continue
        if (
            len(tokens) >= 6
            and tokens[1] in _ITER_TOKENS
            and _is_number(tokens[3])
            and _is_number(tokens[4])
        ):
            return PRIMARY
        if len(tokens) == 4 and _is_number(tokens[3]):  # an integer label, or a grade (0.3)
            return COMPANION
        return None
    return None


def _is_number(text: str) -> bool:
    return _NUMBER.match(text) is not None


def read_pair(run: Path, qrels: Path | None) -> TrecArrays | None:
    """A clean run (and qrels) as arrays, or None (see the module's docstring)."""
    try:
        parsed = _read_run(run)
        judged = _read_qrels(qrels) if qrels is not None else _Qrels(*_no_qrels())
        return _join(parsed, judged)
    except _NotClean:
        return None
    except GZIP_ERRORS:  # a corrupt .gz: the line reader says where
        return None


def _blocks(path: Path) -> Iterator[tuple[NDArray[np.uint8], int]]:
    """The file in blocks of whole lines: (buffer, size), the lines in buffer[:size] (the last
    one given its newline if it lacks it) and at least _SLACK bytes after them.

    Blocks (256 KB) keep every temporary array small: less memory, far fewer pages for the
    kernel to hand out and take back than one pass over the whole file would need, and each
    block's temporaries stay in the CPU's caches (against 4 MB blocks and two threads:
    docs/benchmarks.md, "Figures behind the code"). One buffer is read into and reused, a cut line moved to its front: no bytes
    object per block and no copy to join or cut one. A block is used up before the next is
    read."""
    capacity = _BLOCK_BYTES
    buf = bytearray(capacity + _SLACK)
    kept = 0  # bytes of a line cut at the end of the last block, now at the front
    with open_bytes(path) as fh:
        while True:
            if kept == capacity:  # no line ends in a whole block: a longer buffer
                if capacity >= 16 * _BLOCK_BYTES:
                    raise _NotClean
                capacity *= 2
                longer = bytearray(capacity + _SLACK)
                longer[:kept] = buf[:kept]
                buf = longer
            got = fh.readinto(memoryview(buf)[kept:capacity])
            if not got:
                break
            end = kept + got
            cut = buf.rfind(b"\n", 0, end) + 1
            if cut == 0:  # no line ends in this block yet
                kept = end
                continue
            yield np.frombuffer(buf, dtype=np.uint8), cut
            kept = end - cut
            buf[:kept] = buf[cut:end]
    if kept:
        buf[kept] = 10
        yield np.frombuffer(buf, dtype=np.uint8), kept + 1


def _split(buf: NDArray[np.uint8], size: int, n_fields: int) -> _Fields:
    """A block of whole lines (buf[:size]) split into fields; _NotClean unless it is laid out
    cleanly."""
    data = buf[:size]
    if data.max() > 126:  # non-ASCII or DEL
        raise _NotClean
    is_sep = data <= 32  # separators and newlines; any other byte below " " is a control or "\r"
    # no empty field: no separator first or right after another (so no blank line, no leading
    # or trailing separator, no run of separators)
    if is_sep[0] or np.any(is_sep[1:] & is_sep[:-1]):
        raise _NotClean
    pos = np.flatnonzero(is_sep)
    if pos.size % n_fields:
        raise _NotClean
    table = pos.reshape(-1, n_fields)
    line_ends = table[:, -1]
    # n_fields - 1 separators (space or tab), then the newline, on every line: counted over the
    # block's bytes, cheaper than looking at each separator
    newlines = np.count_nonzero(data == 10)
    if newlines != line_ends.size or not np.all(data[line_ends] == 10):
        raise _NotClean
    if newlines + np.count_nonzero(data == 32) + np.count_nonzero(data == 9) != pos.size:
        raise _NotClean
    line_starts = np.empty(line_ends.size, dtype=np.int64)
    line_starts[0] = 0
    line_starts[1:] = line_ends[:-1] + 1
    if np.any(data[line_starts] == ord("#")):  # a comment line: the line reader skips it
        raise _NotClean
    return _Fields(buf, table[:, :-1], line_starts, line_ends)


def _strings(mat: NDArray[np.uint8]) -> NDArray[np.bytes_]:
    """The rows of a byte matrix as fixed-width byte strings (trailing zeros are padding)."""
    out: NDArray[np.bytes_] = np.ascontiguousarray(mat).view(f"S{mat.shape[1]}").ravel()
    return out


def _keys(strings: NDArray[np.bytes_], words: int) -> NDArray[np.uint64]:
    """A 64-bit key per string, read as `words` 8-byte words: exact up to 8 bytes, a hash beyond.

    Equal strings get equal keys whenever words is the same (zero padding adds nothing)."""
    width = strings.dtype.itemsize
    if width == words * 8:  # already whole words (_Fields.strings)
        cols = np.ascontiguousarray(strings).view(np.uint64).reshape(strings.size, words)
    else:
        padded = np.zeros((strings.size, words * 8), dtype=np.uint8)
        padded[:, :width] = strings.view(np.uint8).reshape(strings.size, width)
        cols = padded.view(np.uint64)
    key = cols[:, 0].copy()
    for j in range(1, words):
        key *= _MIX
        key ^= cols[:, j]
    return key


def _words(*arrays: NDArray[np.bytes_]) -> int:
    return max(1, -(-max(a.dtype.itemsize for a in arrays) // 8))


def _runs_of(values: NDArray[np.bytes_]) -> Ints:
    """Start of each run of equal adjacent values."""
    change = np.empty(values.size, dtype=bool)
    change[0] = True
    if values.dtype.itemsize == 8:  # one word each (_Fields.strings): compared as integers
        words = np.ascontiguousarray(values).view(np.uint64)
        np.not_equal(words[1:], words[:-1], out=change[1:])
    else:
        np.not_equal(values[1:], values[:-1], out=change[1:])
    return np.flatnonzero(change)


def _pair_keys(
    docno: NDArray[np.bytes_], qidx: Ints, words: int, query_bits: int, low_bits: int
) -> NDArray[np.uint64]:
    """A 64-bit key per (query, document): the query in the top query_bits (so that a query's
    keys sit together and lookups stay local), a hash of the docno below them, and low_bits
    zeros at the bottom (where the run's keys hold each row's place in its query)."""
    mixed = _keys(docno, words)
    mixed *= _MIX
    mixed >>= np.uint64(query_bits + low_bits)
    mixed <<= np.uint64(low_bits)
    mixed |= qidx.astype(np.uint64) << np.uint64(64 - query_bits)
    return mixed


def _twice(sorted_keys: NDArray[np.uint64]) -> bool:
    """Whether a sorted array holds a value twice."""
    return bool(np.any(sorted_keys[1:] == sorted_keys[:-1]))


def _run_block(
    buf: NDArray[np.uint8], size: int
) -> tuple[NDArray[np.float64], bytes, NDArray[np.bytes_], NDArray[np.bytes_]]:
    """A block of run lines: scores, the tag (if all lines have one), query ids, docnos."""
    fields = _split(buf, size, 6)
    score = _scores(fields.matrix(4))
    if score is None:
        raise _NotClean
    tags = fields.strings(5)
    if not np.all(tags == tags[0]):  # a mixed tag is a warning the line reader gives
        raise _NotClean
    return score, bytes(tags[0]), fields.strings(0), fields.strings(2)


def _read_run(path: Path) -> _Run:
    scores, qid_parts, doc_parts = [], [], []
    tag = None
    for score, block_tag, qids, docnos in (_run_block(*block) for block in _blocks(path)):
        if tag is None:
            tag = block_tag
        elif block_tag != tag:
            raise _NotClean
        scores.append(score)
        qid_parts.append(qids)
        doc_parts.append(docnos)
    if tag is None:  # no lines: the line reader says so
        raise _NotClean
    score = np.concatenate(scores)
    qids, docno = np.concatenate(qid_parts), np.concatenate(doc_parts)
    del scores, qid_parts, doc_parts
    n = score.size
    # queries coded in order of their first line
    run_starts = _runs_of(qids)
    uniq, first, inverse = np.unique(qids[run_starts], return_index=True, return_inverse=True)
    del qids
    code = np.empty(uniq.size, dtype=np.int64)
    code[np.argsort(first, kind="stable")] = np.arange(uniq.size)
    qidx = np.repeat(code[inverse.ravel()], np.diff(np.append(run_starts, n)))
    # trec_eval's order: score descending, ties by docno descending; + 0.0 makes -0.0 tie 0.0
    score += 0.0
    same_query = qidx[1:] == qidx[:-1]
    if not (np.all(qidx[1:] >= qidx[:-1]) and np.all(~same_query | (score[1:] <= score[:-1]))):
        perm = np.lexsort((-score, qidx))
        qidx, score, docno = qidx[perm], score[perm], docno[perm]
        same_query = qidx[1:] == qidx[:-1]
    tied = same_query & (score[1:] == score[:-1])
    if tied.any():
        # only the rows of tie groups are sorted again, by docno descending
        member = np.zeros(n, dtype=bool)
        member[1:] |= tied
        member[:-1] |= tied
        rows = np.flatnonzero(member)
        new_group = np.ones(rows.size, dtype=bool)
        new_group[1:] = ~tied[rows[1:] - 1] | (rows[1:] != rows[:-1] + 1)
        _, rank = np.unique(docno[rows], return_inverse=True)
        within = np.lexsort((-rank.ravel(), np.cumsum(new_group)))
        docno[rows] = docno[rows[within]]
    return _Run(uniq, code, qidx, docno, tag.decode("ascii"))


def _scores(mat: NDArray[np.uint8]) -> NDArray[np.float64] | None:
    """The numbers of a score column's byte matrix; None unless every one is what the line
    reader takes: a C-style decimal number (_NUMBER), finite."""
    # Below "9" numpy's cast refuses all but _NUMBER's plain decimals and whitespace, which a
    # field never holds (it separates them); letters (an exponent, or "inf", "nan", "1_0")
    # need the character count, and on those characters the cast refuses what _NUMBER does
    if int(mat.max()) <= ord("9") and mat.shape[1] <= 8:
        if mat.shape[1] < 8:
            mat = np.pad(mat, ((0, 0), (0, 8 - mat.shape[1])))
        return _short_decimals(np.ascontiguousarray(mat))
    present = np.bincount(mat.ravel(), minlength=256).astype(bool)
    if np.any(present & ~_SCORE_CHARS_OR_PAD):
        return None
    try:
        score = _strings(mat).astype(np.float64)
    except ValueError:
        return None
    if not np.isfinite(score).all():
        return None
    return score


def _short_decimals(mat: NDArray[np.uint8]) -> NDArray[np.float64] | None:
    """The numbers of an (n, 8) byte matrix of plain decimals (an optional sign, digits and at
    most one point, zero padded), each the double float() gives; None unless every row is one.

    Faster than numpy's string cast, which makes a Python-level parse per value
    (docs/benchmarks.md, "Figures behind the code"). Each row is read as one 64-bit word: the point taken out, the digits combined
    pairwise in three multiply-shift-mask steps (SWAR) into an integer N below 10**8, and the
    value is N / 10**e, e the number of byte slots after the point. Both are exact doubles, so
    the one IEEE division is correctly rounded, as float() is."""
    digit = mat - np.uint8(48)
    is_digit = digit < 10
    is_point = mat == 46
    is_end = mat == 0
    ok = is_digit | is_point
    ok |= is_end
    negative = mat[:, 0] == 45
    ok[:, 0] |= negative | (mat[:, 0] == 43)
    if not ok.all():
        return None
    points = is_point.view("<u8").ravel()  # 1 in the point's byte
    below = points - _ONE  # the bytes before the point; every byte when there is none
    if np.any(points & below) or not is_digit.view("<u8").all():  # one point, a digit
        return None
    digit *= is_digit
    word = digit.view("<u8").ravel()
    word = (word & below) | ((word >> _EIGHT) & ~below)
    for factor, shift, mask in _SWAR_STEPS:
        word = (word * factor + (word >> shift)) & mask
    # the digits before the first point or pad byte: the integer part's length
    marks = (is_point | is_end).view("<u8").ravel()
    before = (marks & (~marks + _ONE)) - _ONE  # all ones in the bytes before it
    value: NDArray[np.float64] = word / _POWERS_OF_TEN[8 - (np.bitwise_count(before) >> 3)]
    np.negative(value, out=value, where=negative)
    return value


def _qrels_block(
    buf: NDArray[np.uint8], size: int
) -> tuple[NDArray[np.int32], NDArray[np.bytes_], NDArray[np.bytes_]]:
    """A block of qrels lines: labels, query ids, docnos."""
    fields = _split(buf, size, 4)
    rel_mat = fields.matrix(3)
    if rel_mat.shape[1] == 8 and not np.any(rel_mat == ord(".")):
        # up to 8 characters: an optional sign and digits, well inside 32 bits, read as words
        short = _short_decimals(rel_mat)
        if short is None:
            raise _NotClean
        return short.astype(np.int32), fields.strings(0), fields.strings(2)
    # an integer: an optional sign, then 1 to 10 digits
    start, end = fields.bounds(3)
    signed = _SIGNS[rel_mat[:, 0]]
    digits = _DIGITS[rel_mat].sum(axis=1)
    if not np.array_equal(digits, end - start - signed) or digits.min() < 1:
        raise _NotClean
    if digits.max() > 10:
        raise _NotClean
    rel = _strings(rel_mat).astype(np.int64)
    if rel.min() < -_INT32 or rel.max() >= _INT32:
        raise _NotClean
    return rel.astype(np.int32), fields.strings(0), fields.strings(2)


def _read_qrels(path: Path) -> _Qrels:
    parts = [_qrels_block(*block) for block in _blocks(path)]
    if not parts:
        raise _NotClean
    rels, qids, docnos = zip(*parts, strict=True)
    return _Qrels(np.concatenate(qids), np.concatenate(docnos), np.concatenate(rels))


def _no_qrels() -> tuple[NDArray[np.bytes_], NDArray[np.bytes_], NDArray[np.int32]]:
    return np.zeros(0, dtype="S1"), np.zeros(0, dtype="S1"), np.zeros(0, dtype=np.int32)


def _join(run: _Run, qrels: _Qrels) -> TrecArrays:
    """Query codes for the qrels (judged-only queries after the run's), labels for the run."""
    n_run = run.uniq.size
    n_rows = run.qidx.size
    # qrels query ids to codes: the run's, or new ones in order of their first qrels line
    if qrels.qid.size:
        starts = _runs_of(qrels.qid)
        uniq, first, inverse = np.unique(qrels.qid[starts], return_index=True, return_inverse=True)
        # both sides' ids sorted together (S arrays of different widths compare as strings)
        _, at = np.unique(np.concatenate([run.uniq, uniq]), return_inverse=True)
        run_code = np.full(n_run + uniq.size, -1, dtype=np.int64)
        run_code[at[:n_run]] = run.code
        code = run_code[at[n_run:]]
        found = code >= 0
        extra = np.flatnonzero(~found)
        extra = extra[np.argsort(first[extra], kind="stable")]
        code[extra] = n_run + np.arange(extra.size)
        judged_query = np.repeat(code[inverse.ravel()], np.diff(np.append(starts, qrels.qid.size)))
        extra_ids = [q.decode("ascii") for q in uniq[extra].tolist()]
    else:
        judged_query = np.zeros(0, dtype=np.int64)
        extra_ids = []
    n = n_run + len(extra_ids)
    # Each run row's key holds its place in its query in the low bits, so that sorting the keys
    # alone (no argsort: less than half the time) still tells each key's row. At least 32 bits are
    # left for the docno's hash (a false duplicate is then rare, and only refuses the file).
    query_start = np.searchsorted(run.qidx, np.arange(n_run))
    rank = np.arange(n_rows) - query_start[run.qidx]  # 0-based until the keys hold it
    query_bits = max(1, (n - 1).bit_length())
    low_bits = max(1, int(rank.max()).bit_length())
    if query_bits + low_bits > 32:
        raise _NotClean
    below_pair = np.uint64(1 << low_bits)  # keys closer than this hold the same pair
    words = _words(run.docno, qrels.docno)
    run_keys = _pair_keys(run.docno, run.qidx, words, query_bits, low_bits)
    run_keys |= rank.view(np.uint64)
    rank += 1
    run_keys.sort()
    if np.any((run_keys[1:] ^ run_keys[:-1]) < below_pair):  # a document twice in one query
        raise _NotClean  # (or a key collision)
    judged_keys = _pair_keys(qrels.docno, judged_query, words, query_bits, low_bits)
    order = np.argsort(judged_keys)
    judged_keys = judged_keys[order]
    if _twice(judged_keys):  # a judgement twice (or a key collision)
        raise _NotClean
    # each judgement looked up among the run's sorted keys (fewer lookups than the reverse), in
    # key order: the lookups walk the run's keys once instead of jumping about
    at = np.minimum(np.searchsorted(run_keys, judged_keys), n_rows - 1)
    in_the_run = np.flatnonzero((run_keys[at] ^ judged_keys) < below_pair)
    line = order[in_the_run]
    low = run_keys[at[in_the_run]] & (below_pair - _ONE)
    hit = query_start[judged_query[line]] + low.astype(np.int64)
    # the keys matched: the strings must too, or the line reader decides
    width = max(run.docno.dtype.itemsize, qrels.docno.dtype.itemsize)
    matched = run.docno[hit].astype(f"S{width}", copy=False)
    judged = qrels.docno[line].astype(f"S{width}", copy=False)
    if not (
        np.array_equal(judged_query[line], run.qidx[hit])
        and np.array_equal(matched.view(np.uint8), judged.view(np.uint8))
    ):
        raise _NotClean
    ret_label = np.zeros(n_rows, dtype=np.int32)
    ret_label[hit] = qrels.rel[line]
    # what the qrels say of each run row: 1 judged, -1 pooled (a negative label), 0 absent
    ret_judged = np.zeros(n_rows, dtype=np.int8)
    ret_judged[hit] = np.where(qrels.rel[line] >= 0, 1, -1)
    query_ids = [q.decode("ascii") for q in run.uniq[np.argsort(run.code)].tolist()]
    in_run = np.zeros(n, dtype=bool)
    in_run[:n_run] = True
    has_qrels = np.zeros(n, dtype=bool)
    has_qrels[judged_query] = True
    return TrecArrays(
        query_ids + extra_ids,
        in_run,
        has_qrels,
        run.qidx,
        rank,
        ret_label,
        ret_judged,
        judged_query,
        qrels.rel,
        run.tag,
    )


def ranks_within(qidx: NDArray[np.int64]) -> NDArray[np.int64]:
    """1-based position of each row within its run of equal qidx (rows sorted by qidx): the
    ranks of a run whose rows are in rank order within each query (both TREC routes)."""
    if qidx.size == 0:
        return np.zeros(0, dtype=np.int64)
    starts = np.flatnonzero(np.r_[True, qidx[1:] != qidx[:-1]])
    lengths = np.diff(np.r_[starts, qidx.size])
    return np.arange(qidx.size, dtype=np.int64) - np.repeat(starts, lengths) + 1
