"""Pick a reader for each input file, group primaries with their companions, and start reading.

Formats are tried in the fixed order of FORMATS; the first whose sniff() claims a file wins. The
grouping rules (docs/formats.md, "Detection and grouping"): every primary file is one run; a
companion (qrels, gold set) is attached to every primary of its format; two companions of one
format, a companion without a primary, and a missing required companion are errors.

Three hooks serve the formats made of several files. A folder given as input is a BEIR dataset
and stands for its files (beir.folder_files). A reader's PARTS are roles beyond its companion
(BEIR's corpus and queries), handed to its read() as parts={role: path}. A reader's ADOPTS maps
(format, role) to its own role: a file another format claims (a TREC run beside a BEIR dataset,
TREC qrels beside an OpenInference export) joins the adopting format when that format has a
file of its own among the inputs and the other format has no primary left without it.
"""

from __future__ import annotations

import codecs
import importlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from rageval_core.errors import ProblemLog, UsageError
from rageval_core.formats.base import (
    GZIP_ERRORS,
    GZIP_FORMATS,
    HEAD_BYTES,
    SIDECAR_SUFFIX,
    display_path,
    file_problem,
    is_file,
    is_gzip,
    open_bytes,
    path_problem,
    unreadable,
)
from rageval_core.model import ParsedRun

#: every reader module, in the order they are tried (the specific JSON shapes before trec and csv)
FORMATS: tuple[str, ...] = (
    "native",
    "tatrag",
    "qa_pairs",
    "ragas",
    "deepeval",
    "llamaindex",
    "openinference",
    "ranx",
    "trec",
    "beir",
    "table",
)

_PARQUET_MAGIC = b"PAR1"
_EXPECTED = f"expected one of: {', '.join(FORMATS)}; see docs/formats.md"


def module_for(name: str) -> ModuleType:
    """The reader module of a format name (as given to --format); UsageError for an unknown name."""
    if name not in FORMATS:
        raise UsageError(f"unknown format {name!r} (expected one of: {', '.join(FORMATS)})")
    return importlib.import_module(f"rageval_core.formats.{name}")


@dataclass(frozen=True, slots=True)
class _Detected:
    path: Path
    shown: str
    format: str
    role: str


def read_inputs(
    paths: Sequence[Path], fmt: str | None, log: ProblemLog, questions: bool = False
) -> list[ParsedRun]:
    """One ParsedRun per primary input file, in the order given (queries still to be streamed).

    questions (`rageval collect`'s question files): a gold set without its run (a QA-pair file,
    a TAT-RAG golden set, a BEIR dataset) is read too, as its questions and their gold with
    nothing retrieved (the reader's read_questions), after the runs.

    Problems with detection or grouping (missing, empty, binary, unknown files, companions that
    fit no primary ...) are all collected first, then raised together as one InputError before
    anything is read. Problems inside the files go to log as their queries are consumed.
    """
    if fmt is not None:
        module_for(fmt)  # an unknown name is a usage error before any file is looked at
    if not paths:
        raise UsageError("no input files given")
    unique: dict[Path, Path] = {}
    for given in paths:
        problem = path_problem(given)  # a NUL byte, a symlink loop ...: no file to look at
        if problem is not None:
            log.error(display_path(given), 0, "file", problem)
            continue
        unique.setdefault(given.resolve(), given)  # the same file given twice is read once
    detected: list[_Detected] = []
    for given in unique.values():
        for path in _expand_folder(given, log):
            # a folder's file may be a symlink loop: _detect names it (path_problem)
            if path_problem(path) is None and _is_given_sidecar(path.resolve(), unique, log):
                continue
            found = _detect(path, fmt, log)
            if found is not None:
                detected.append(found)
    detected = _adopt(detected)
    alone = _questions_alone(detected) if questions else set()
    groups = _group(detected, log, alone)
    parts = _parts(detected, log, alone)
    log.raise_if_errors()
    runs = []
    for item in detected:
        module = module_for(item.format)
        if item.role == module.PRIMARY:
            if getattr(module, "PARTS", ()):
                runs.extend(
                    _as_list(
                        module.read(
                            item.path,
                            groups.get(item.format),
                            log,
                            parts=parts.get(item.format, {}),
                        )
                    )
                )
            else:
                runs.extend(_as_list(module.read(item.path, groups.get(item.format), log)))
    for name in (f for f in FORMATS if f in alone):
        runs.append(module_for(name).read_questions(groups.get(name), parts.get(name, {}), log))
    from rageval_core.formats.options import apply_options

    return apply_options(runs)


def _as_list(read: ParsedRun | list[ParsedRun]) -> list[ParsedRun]:
    """A reader returns one run, or several (an OpenInference export: one per stage)."""
    return read if isinstance(read, list) else [read]


def _expand_folder(path: Path, log: ProblemLog) -> list[Path]:
    """[path], or for a folder the files of the BEIR dataset it holds (none, logged, otherwise)."""
    try:
        is_dir = path.is_dir()
    except OSError:
        is_dir = False
    if not is_dir:
        return [path]
    import rageval_core.formats.beir as beir

    return beir.folder_files(path, log)


def _adopt(detected: list[_Detected]) -> list[_Detected]:
    """The files other formats claimed that an adopting format takes as its own (ADOPTS)."""
    present = {item.format for item in detected}
    for name in (f for f in FORMATS if f in present):  # in FORMATS order: the same every time
        adopts: dict[tuple[str, str], str] = getattr(module_for(name), "ADOPTS", {})
        if not adopts:
            continue
        taken = [i for i, item in enumerate(detected) if (item.format, item.role) in adopts]
        left = {
            item.format
            for i, item in enumerate(detected)
            if i not in taken and item.role == module_for(item.format).PRIMARY
        }
        for i in taken:
            item = detected[i]
            if item.format not in left:
                role = adopts[(item.format, item.role)]
                detected[i] = _Detected(item.path, item.shown, name, role)
    return detected


def _adopted_role(module: ModuleType, path: Path, head: bytes) -> str | None:
    """Under --format, the role of a file another format would claim and this one adopts."""
    adopts: dict[tuple[str, str], str] = getattr(module, "ADOPTS", {})
    for other in {name for name, _ in adopts}:
        role = module_for(other).sniff(path, head)
        if role is not None and (other, role) in adopts:
            return adopts[(other, role)]
    return None


def _questions_alone(detected: list[_Detected]) -> set[str]:
    """The formats given without a primary file whose reader reads a gold set alone."""
    primaries = {item.format for item in detected if item.role == module_for(item.format).PRIMARY}
    return {
        item.format
        for item in detected
        if item.format not in primaries and hasattr(module_for(item.format), "read_questions")
    }


def _parts(
    detected: list[_Detected], log: ProblemLog, alone: set[str]
) -> dict[str, dict[str, Path]]:
    """format -> {part role: file}; a part given twice, or without a primary (unless its
    format is read alone: `alone`), is an error."""
    out: dict[str, dict[str, _Detected]] = {}
    primaries = {item.format for item in detected if item.role == module_for(item.format).PRIMARY}
    primaries |= alone
    for item in detected:
        if item.role not in getattr(module_for(item.format), "PARTS", ()):
            continue
        first = out.setdefault(item.format, {}).get(item.role)
        if first is not None:
            log.error(
                item.shown,
                0,
                "file",
                f"a second {item.format} {item.role} file (the first is {first.shown}); give one",
            )
        elif item.format not in primaries:
            log.error(
                item.shown,
                0,
                "file",
                f"a {item.format} {item.role} file without a {item.format} run to go with it",
            )
        else:
            out[item.format][item.role] = item
    return {name: {role: item.path for role, item in roles.items()} for name, roles in out.items()}


def _is_given_sidecar(resolved: Path, given: dict[Path, Path], log: ProblemLog) -> bool:
    """True for a FILE.run.json whose FILE exists: skipped when FILE is given, an error otherwise."""
    if not resolved.name.endswith(SIDECAR_SUFFIX):
        return False
    base = resolved.with_name(resolved.name.removesuffix(SIDECAR_SUFFIX))
    if base in given:
        return True
    if is_file(base):
        shown = display_path(given[resolved])
        log.error(
            shown,
            0,
            "file",
            f"run facts of {display_path(base)}, not a run: give that file instead",
        )
        return True
    return False  # no such FILE: a run that merely has a .run.json name


def _detect(path: Path, forced: str | None, log: ProblemLog) -> _Detected | None:
    """The format and role of one file, or None after logging why it has none."""
    shown = display_path(path)
    problem = file_problem(path)
    if problem is not None:
        log.error(shown, 0, "file", problem)
        return None
    try:
        compressed = is_gzip(path)
        with open_bytes(path) as fh:  # a .gz file is sniffed by what it holds
            head = fh.read(HEAD_BYTES)
            complete = not fh.read(1)
    except GZIP_ERRORS as e:
        log.error(shown, 0, "file", unreadable(e))
        return None
    found = _sniffed(path, shown, head, complete, forced, log)
    if found is not None and compressed and found.format not in GZIP_FORMATS:
        log.error(
            shown,
            0,
            "file",
            f"a gzip-compressed {found.format} file: only TREC runs and qrels are read "
            "compressed; decompress it (gunzip) and give the plain file",
        )
        return None
    return found


def _sniffed(
    path: Path, shown: str, head: bytes, complete: bool, forced: str | None, log: ProblemLog
) -> _Detected | None:
    """The format and role its head shows, or None after logging why it has none."""
    if not head.strip():
        log.error(shown, 0, "file", "empty file")
        return None
    if not head.startswith(_PARQUET_MAGIC):
        binary = _binary_problem(head, complete)
        if binary is not None:
            expected = f"expected a {forced} file" if forced is not None else _EXPECTED
            log.error(shown, 0, "file", f"{binary}, not a run ({expected})")
            return None
    if forced is not None:
        module = module_for(forced)
        role = module.sniff(path, head) or _adopted_role(module, path, head)
        return _Detected(path, shown, forced, role or module.PRIMARY)
    for name in FORMATS:
        module = module_for(name)
        role = module.sniff(path, head)
        if role is not None:
            return _Detected(path, shown, name, role)
    log.error(shown, 0, "file", f"unknown format ({_EXPECTED})")
    return None


def _binary_problem(head: bytes, complete: bool) -> str | None:
    """Why head is not UTF-8 text, or None when it is (a multi-byte character cut at the end is fine)."""
    encoding = _wide_encoding(head)
    if encoding is not None:
        return f"{encoding} text (save it as UTF-8)"
    if b"\x00" in head:
        return "binary file"
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=complete)
    except UnicodeDecodeError:
        return "binary file"
    return None


#: byte-order marks, UTF-32's first: FF FE 00 00 (UTF-32 LE) starts with FF FE (UTF-16 LE)
_BOMS = (
    (codecs.BOM_UTF32_LE, "UTF-32"),
    (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF16_LE, "UTF-16"),
    (codecs.BOM_UTF16_BE, "UTF-16"),
)


def _wide_encoding(head: bytes) -> str | None:
    """UTF-32 or UTF-16 when head is text in one (by its byte-order mark, or without one by where
    the zero bytes of an ASCII first character fall: "{" is 7B 00 00 00 in UTF-32 LE)."""
    for bom, name in _BOMS:
        if head.startswith(bom):
            return name
    first = head[:4]
    if len(first) == 4 and first.count(0) == 3 and (first[0] or first[3]):
        return "UTF-32"
    if (
        len(first) == 4
        and first[1::2] == b"\0\0"
        and first[0::2].isascii()
        and first[0]
        and first[2]
    ):
        return "UTF-16"  # little-endian: x 00 y 00
    if len(first) == 4 and first[0::2] == b"\0\0" and first[1] and first[3]:
        return "UTF-16"  # big-endian: 00 x 00 y
    return None


def _group(detected: list[_Detected], log: ProblemLog, alone: set[str]) -> dict[str, Path]:
    """Check the grouping rules; returns format -> its companion file (a companion without a
    primary is fine for a format read alone: `alone`)."""
    companions: dict[str, _Detected] = {}
    primaries: dict[str, list[_Detected]] = {}
    for item in detected:
        module = module_for(item.format)
        if item.role == module.PRIMARY:
            primaries.setdefault(item.format, []).append(item)
        elif item.role != module.COMPANION:
            continue  # a part (_parts checks those)
        elif item.format in companions:
            first = companions[item.format]
            log.error(
                item.shown,
                0,
                "file",
                (
                    f"a second {item.format} {module.COMPANION} file (the first is {first.shown}); give one"
                ),
            )
        else:
            companions[item.format] = item
    for name, item in companions.items():
        if name not in primaries and name not in alone:
            module = module_for(name)
            log.error(
                item.shown,
                0,
                "file",
                (
                    f"a {name} {module.COMPANION} file without a {name} {module.PRIMARY} file to go with it"
                ),
            )
    for name, items in primaries.items():
        module = module_for(name)
        if module.COMPANION_REQUIRED and name not in companions:
            for item in items:
                log.error(
                    item.shown,
                    0,
                    "file",
                    (f"a {name} {module.PRIMARY} file needs a {module.COMPANION} file; none given"),
                )
    return {name: item.path for name, item in companions.items()}
