"""A BEIR dataset (corpus.jsonl, queries.jsonl, qrels/<split>.tsv) with a run over it.

The dataset is given as its folder or as its files; the run is a TREC run file or a BEIR results
file {qid: {doc_id: score}} (the dict EvaluateRetrieval.retrieve returns, saved as JSON; ranx's
run files have the same shape). Chunk texts come from the corpus as BEIR's models build them
(title and text joined by a space), query texts from queries.jsonl; only the corpus entries the
run retrieved are kept, so a large corpus is streamed, not held. A folder whose qrels/ holds
several splits uses test.tsv, as GenericDataLoader.load() does by default; another split is
chosen by giving its file. --ignore-identical-ids (formats/options.py) drops a document whose
id equals the query id, as BEIR's evaluate(ignore_identical_ids=True) does.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from rageval_core.errors import ProblemLog
from rageval_core.formats.base import (
    display_path,
    exists_or_link,
    first_line,
    merge_info,
    open_input,
    read_sidecar,
    unreadable,
)
from rageval_core.formats.jsonarray import describe, first_record, id_text, iter_lines, peek_first
from rageval_core.formats.scored import (
    Judgements,
    Scores,
    is_beir_qrels_header,
    is_score_map,
    read_qrels,
    read_score_map,
    scored_queries,
)
from rageval_core.model import ParsedRun, Query, RunInfo

FORMAT = "beir"
PRIMARY = "run"
COMPANION: str | None = "qrels"
COMPANION_REQUIRED = False
#: the dataset's other files, found beside qrels/ when not given
CORPUS, QUERIES = "corpus", "queries"
PARTS = (CORPUS, QUERIES)
#: a run or qrels file another reader claims joins a BEIR dataset given beside it
ADOPTS = {
    ("trec", "run"): PRIMARY,
    ("ranx", "run"): PRIMARY,
    ("trec", "qrels"): COMPANION,
    ("ranx", "qrels"): COMPANION,
}
_SPLIT = "test"


def sniff(path: Path, head: bytes) -> str | None:
    """COMPANION for BEIR's qrels TSV, CORPUS or QUERIES for its JSON Lines, None otherwise (a
    run is claimed by trec or ranx and adopted; under --format beir any other file is the run)."""
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff")
    if is_beir_qrels_header(first_line(text)):
        return COMPANION
    record = first_record(head)
    if not isinstance(record, Mapping) or "_id" not in record or not text.lstrip().startswith("{"):
        return None
    if isinstance(peek_first(head), Mapping) and is_score_map(peek_first(head)):
        return None
    name = path.name.lower()
    if "quer" in name:
        return QUERIES
    if "corpus" in name or "title" in record:
        return CORPUS
    return QUERIES if "text" in record else None


def folder_files(folder: Path, log: ProblemLog) -> list[Path]:
    """The files of the BEIR dataset in folder: corpus.jsonl, queries.jsonl and one qrels split."""
    shown = display_path(folder)
    # whatever stands at a dataset file's name is taken, and refused by name when it is a FIFO,
    # a device, a folder or a symlink loop (detect's file_problem), never skipped in silence
    files = [
        folder / name for name in ("corpus.jsonl", "queries.jsonl") if exists_or_link(folder / name)
    ]
    qrels_dir = folder / "qrels"
    splits = sorted(qrels_dir.glob("*.tsv")) if qrels_dir.is_dir() else []
    if not files and not splits:
        log.error(
            shown,
            0,
            "file",
            "a folder, not a run (a BEIR dataset folder holds corpus.jsonl, queries.jsonl and qrels/)",
        )
        return []
    if len(splits) > 1:
        chosen = [p for p in splits if p.stem == _SPLIT]
        if not chosen:
            names = ", ".join(p.name for p in splits)
            log.error(
                shown,
                0,
                "qrels",
                f"several splits ({names}) and no {_SPLIT}.tsv: give one as {shown}/qrels/NAME.tsv",
            )
            return []
        splits = chosen
    return files + splits


def read(
    primary: Path,
    companion: Path | None,
    log: ProblemLog,
    parts: Mapping[str, Path] | None = None,
) -> ParsedRun:
    """The run joined with the dataset's qrels, query texts and chunk texts."""
    parts = _dataset_parts(companion, parts)
    shown = [display_path(primary)] + [
        display_path(p) for p in (companion, *parts.values()) if p is not None
    ]
    info = merge_info(RunInfo(), read_sidecar(primary, log))
    run = _read_run(primary, log)
    qrels: Judgements | None = read_qrels(companion, log) if companion is not None else None
    if run is None:
        return ParsedRun(info, [], FORMAT, tuple(shown))
    wanted = {doc for docs in run.docs.values() for doc in docs}
    texts = _read_jsonl(parts[CORPUS], log, wanted, corpus=True) if CORPUS in parts else {}
    questions = _read_jsonl(parts[QUERIES], log, None, corpus=False) if QUERIES in parts else {}
    queries = scored_queries(run, qrels, log, texts=texts, questions=questions)
    return ParsedRun(info, queries, FORMAT, tuple(shown))


def _dataset_parts(companion: Path | None, given: Mapping[str, Path] | None) -> dict[str, Path]:
    """The parts given, with corpus.jsonl and queries.jsonl found beside the qrels' folder."""
    parts = dict(given or {})
    if companion is not None:  # BEIR's layout: DATASET/qrels/test.tsv beside DATASET/corpus.jsonl
        dataset = companion.parent.parent if companion.parent.name == "qrels" else companion.parent
        for role, name in ((CORPUS, "corpus.jsonl"), (QUERIES, "queries.jsonl")):
            if role not in parts and exists_or_link(dataset / name):  # read through open_input
                parts[role] = dataset / name
    return parts


def read_questions(
    companion: Path | None, parts: Mapping[str, Path] | None, log: ProblemLog
) -> ParsedRun:
    """A BEIR dataset without a run: the questions of queries.jsonl (the ones its qrels judge,
    when a split's qrels are there, each with them), nothing retrieved."""
    parts = _dataset_parts(companion, parts)
    shown = tuple(display_path(p) for p in (companion, *parts.values()) if p is not None)
    if QUERIES not in parts:
        log.error(
            shown[0], 0, QUERIES, "a BEIR dataset's questions are in queries.jsonl: none found"
        )
        return ParsedRun(RunInfo(), [], FORMAT, shown)
    texts = _read_jsonl(parts[QUERIES], log, None, corpus=False)
    qrels = read_qrels(companion, log) if companion is not None else None
    ids = list(qrels.labels) if qrels is not None else list(texts)
    queries = [
        Query(
            query_id=qid,
            query=texts.get(qid),
            relevance=qrels.labels[qid] if qrels is not None else None,
            line=qrels.first_line[qid] if qrels is not None else 0,
        )
        for qid in ids
    ]
    return ParsedRun(RunInfo(), queries, FORMAT, shown)


def _read_run(path: Path, log: ProblemLog) -> Scores | None:
    """A BEIR results JSON file or a TREC run file, as a score map."""
    with open_input(path) as fh:
        head = fh.read(4096)
    if head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{"):
        return read_score_map(path, log, labels=False)
    import rageval_core.formats.trec as trec

    parsed = trec.read(path, None, log)
    out = Scores(parsed.sources[0])
    for query in parsed.queries:
        out.docs[query.query_id] = {c.doc_id: c.score or 0.0 for c in query.retrieved or ()}
        out.first_line[query.query_id] = query.line
    return out


def _read_jsonl(
    path: Path, log: ProblemLog, wanted: set[str] | None, corpus: bool
) -> dict[str, str]:
    """_id -> text of corpus.jsonl (title + " " + text, only the wanted ids) or queries.jsonl."""
    file = display_path(path)
    out: dict[str, str] = {}
    lines: dict[str, int] = {}
    try:
        with open_input(path, "r", encoding="utf-8-sig") as fh:
            for line, record in iter_lines(fh, file, log):
                if not isinstance(record, Mapping):
                    log.error(file, line, "record", f"expected an object, got {describe(record)}")
                    continue
                doc_id = id_text(record.get("_id"))
                if doc_id is None:
                    log.error(
                        file,
                        line,
                        "_id",
                        f"expected a non-empty string or an integer, got {describe(record.get('_id'))}",
                    )
                    continue
                if wanted is not None and doc_id not in wanted:
                    continue  # a corpus entry the run never retrieved (ids kept only for those)
                if doc_id in lines:
                    log.error(
                        file, line, "_id", f'duplicate "{doc_id}" (first on line {lines[doc_id]})'
                    )
                    continue
                lines[doc_id] = line
                fields = ("title", "text") if corpus else ("text",)
                values = [record.get(key) for key in fields]
                bad = next(
                    (
                        k
                        for k, v in zip(fields, values, strict=True)
                        if v is not None and not isinstance(v, str)
                    ),
                    None,
                )
                if bad is not None:
                    log.error(file, line, bad, f"expected a string, got {describe(record[bad])}")
                    continue
                out[doc_id] = " ".join(v for v in values if v).strip()
    except (OSError, UnicodeDecodeError) as e:  # a FIFO, a confined path ... by name too
        log.error(file, 0, "file", unreadable(e))
    return out
