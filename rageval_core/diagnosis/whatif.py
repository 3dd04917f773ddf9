"""What each reason's fix would do, computed on the same arrays: how many failing queries pass
after the change (every gold span covered in the top k, or in ids mode a relevant document in
it). Each count equals what evaluate() gives at the changed setting (tests/core/diagnosis)."""

from __future__ import annotations

import numpy as np

from rageval_core.diagnosis.model import EVIDENCE_REASONS, IDS_REASONS, Missed, WhatIf
from rageval_core.diagnosis.reasons import Bools, EvidenceArrays, IdsArrays, near_miss_threshold
from rageval_core.evaluate import Settings


def larger_k(k: int, depth: int) -> int:
    """The cut-off the ranked_below_k fix tries: twice k, at most the run's depth."""
    return min(2 * k, depth)


def evidence_what_if(
    arrays: EvidenceArrays, s: Settings, failing: Bools, missed: Missed
) -> tuple[WhatIf, ...]:
    """One line per reason the missed spans have, in the reasons' order (not_retrieved has
    none: no setting fixes evidence that is in no retrieved chunk)."""
    n_failing = int(np.count_nonzero(failing))
    counts = np.bincount(missed.reason, minlength=len(EVIDENCE_REASONS))

    def fixed(passing: Bools) -> int:
        return int(np.count_nonzero(failing & passing))

    out = []
    if counts[0]:  # numbers_differ
        refused = _refused_chunks(arrays, s, missed)
        out.append(
            WhatIf(
                "numbers_differ",
                "numbers guard off",
                fixed(arrays.passing(arrays.hits(s.threshold, guarded=False), s.k)),
                n_failing,
                int(counts[0]),
                f"it would count {refused} chunks with other figures: likely wrong versions or "
                "entities",
            )
        )
    depth = arrays.raw.shape[1]
    if counts[1] and larger_k(s.k, depth) > s.k:  # ranked_below_k
        k2 = larger_k(s.k, depth)
        out.append(
            WhatIf(
                "ranked_below_k",
                f"k = {k2}",
                fixed(arrays.passing(arrays.hits(s.threshold), k2)),
                n_failing,
                int(counts[1]),
            )
        )
    if counts[2]:  # split_across_chunks
        split = missed.reason == 2
        whole = np.zeros(failing.size, dtype=bool)
        whole[missed.qidx] = True
        whole[missed.qidx[~split]] = False  # a query passes when every missed span was a split
        chars = int(missed.extra_chars[split].max())
        out.append(
            WhatIf(
                "split_across_chunks",
                f"chunks keeping {chars} more characters of context",
                fixed(whole),
                n_failing,
                int(counts[2]),
                f"each of the {int(counts[2])} split spans would be whole in one chunk with its "
                "second part's chunk appended",
            )
        )
    if counts[3]:  # near_miss
        t2 = near_miss_threshold(s)
        out.append(
            WhatIf(
                "near_miss",
                f"threshold {t2:g}",
                fixed(arrays.passing(arrays.hits(t2), s.k)),
                n_failing,
                int(counts[3]),
                f"it would count {int(counts[3])} near misses: check them on Threshold tuning "
                "first",
            )
        )
    return tuple(out)


def _refused_chunks(arrays: EvidenceArrays, s: Settings, missed: Missed) -> int:
    """Distinct top-k chunks the guard refuses for a numbers_differ span."""
    rows = missed.reason == 0
    q, e = missed.qidx[rows], missed.item[rows]
    k = min(s.k, arrays.raw.shape[1])
    assert arrays.refused is not None
    with np.errstate(invalid="ignore"):
        refused = (arrays.raw[q, :k, e] >= np.float32(s.threshold)) & arrays.refused[q, :k, e]
    qq, rr = np.nonzero(refused)
    return int(np.unique(q[qq] * (k + 1) + rr).size)


def ids_what_if(
    arrays: IdsArrays, s: Settings, failing_rows: Bools, missed: Missed
) -> tuple[WhatIf, ...]:
    """k larger for relevant_below_k (failing_rows: over the arrays' rows)."""
    counts = np.bincount(missed.reason, minlength=len(IDS_REASONS))
    k2 = larger_k(s.k, arrays.relevant.shape[1])
    if not counts[0] or k2 <= s.k:
        return ()
    n_failing = int(np.count_nonzero(failing_rows))
    fixes = int(np.count_nonzero(failing_rows & arrays.passing(k2)))
    return (WhatIf("relevant_below_k", f"k = {k2}", fixes, n_failing, int(counts[0])),)
