"""ranx's JSON run and qrels files, as Run.save and Qrels.save write them ({qid: {doc_id: number}}).

The two files have one shape; a run's numbers are scores (ranx writes them as floats), a qrels
file's are integer labels, and that is how the sniffer tells them apart. The run is ordered as
ranx and pytrec_eval order it: score descending, ties by doc id descending. ranx's TREC files
(kind="trec") are read by the trec reader.
"""

from __future__ import annotations

from pathlib import Path

from rageval_core.errors import ProblemLog
from rageval_core.formats.base import display_path, merge_info, read_sidecar
from rageval_core.formats.jsonarray import peek_first
from rageval_core.formats.scored import (
    all_integers,
    is_score_map,
    read_qrels,
    read_score_map,
    scored_queries,
)
from rageval_core.model import ParsedRun, RunInfo

FORMAT = "ranx"
PRIMARY = "run"
COMPANION: str | None = "qrels"
COMPANION_REQUIRED = False


def sniff(path: Path, head: bytes) -> str | None:
    """For {qid: {doc_id: number}}: COMPANION when the file's name says qrels, PRIMARY when it
    says run, else by the numbers (every one in sight an integer: qrels); None for other files."""
    top = peek_first(head)
    if not is_score_map(top):
        return None
    assert isinstance(top, dict)
    name = path.name.lower()
    if "qrel" in name:
        return COMPANION
    if "run" in name:
        return PRIMARY
    return COMPANION if all_integers(top) else PRIMARY


def read(primary: Path, companion: Path | None, log: ProblemLog) -> ParsedRun:
    """The run (and its qrels, in any shape read_qrels takes) as queries."""
    file = display_path(primary)
    sources = (file,) + (() if companion is None else (display_path(companion),))
    info = merge_info(RunInfo(), read_sidecar(primary, log))
    run = read_score_map(primary, log, labels=False)
    qrels = read_qrels(companion, log) if companion is not None else None
    if run is None:
        return ParsedRun(info, [], FORMAT, sources)
    return ParsedRun(info, scored_queries(run, qrels, log), FORMAT, sources)
