"""Format detection and the grouping of primaries with companions (read_inputs)."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest

from rageval_core.errors import InputError, ProblemLog, UsageError
from rageval_core.formats import FORMATS, detect, module_for, read_inputs
from rageval_core.model import ParsedRun, RunInfo
from tests.paths import REPO

GOOD = REPO / "tests" / "data" / "good"


def fake_format(name: str, *, required: bool) -> SimpleNamespace:
    """A reader claiming files that start with '<name> run' (primary) or '<name> gold' (companion)."""

    def sniff(path: Path, head: bytes) -> str | None:
        if head.startswith(f"{name} run".encode()):
            return "run"
        if head.startswith(f"{name} gold".encode()):
            return "gold"
        return None

    def read(primary: Path, companion: Path | None, log: ProblemLog) -> ParsedRun:
        sources = (primary.name,) if companion is None else (primary.name, companion.name)
        return ParsedRun(RunInfo(), iter(()), name, sources)

    return SimpleNamespace(
        FORMAT=name,
        PRIMARY="run",
        COMPANION="gold",
        COMPANION_REQUIRED=required,
        sniff=sniff,
        read=read,
    )


@pytest.fixture
def fakes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Two fake formats, 'pair' (gold optional) and 'strict' (gold required); cwd = tmp_path."""
    modules = {
        "pair": fake_format("pair", required=False),
        "strict": fake_format("strict", required=True),
    }

    def fake_module_for(name: str) -> ModuleType:
        if name not in modules:
            raise UsageError(f"unknown format {name!r}")
        return modules[name]  # type: ignore[return-value]

    monkeypatch.setattr(detect, "FORMATS", tuple(modules))
    monkeypatch.setattr(detect, "module_for", fake_module_for)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def make(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.write_text(text)
    return path


def problems(exc: pytest.ExceptionInfo[InputError]) -> list[str]:
    return [str(p) for p in exc.value.problems]


def test_formats_are_tried_in_the_documented_order() -> None:
    assert FORMATS == (
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


def test_every_registered_module_has_the_reader_interface() -> None:
    for name in FORMATS:
        module = module_for(name)
        assert name == module.FORMAT
        assert module.PRIMARY and module.PRIMARY != module.COMPANION
        assert isinstance(module.COMPANION_REQUIRED, bool)
        assert not (module.COMPANION_REQUIRED and module.COMPANION is None)
        assert callable(module.sniff) and callable(module.read)


def test_one_companion_is_shared_by_every_primary_of_its_format(fakes: Path) -> None:
    a = make(fakes, "a.txt", "pair run 1")
    b = make(fakes, "b.txt", "pair run 2")
    gold = make(fakes, "gold.txt", "pair gold")
    runs = read_inputs([a, gold, b], None, ProblemLog())
    assert [r.sources for r in runs] == [("a.txt", "gold.txt"), ("b.txt", "gold.txt")]


def test_primaries_of_different_formats_keep_their_own_companions(fakes: Path) -> None:
    pair = make(fakes, "p.txt", "pair run")
    strict = make(fakes, "s.txt", "strict run")
    strict_gold = make(fakes, "sg.txt", "strict gold")
    runs = read_inputs([strict_gold, pair, strict], None, ProblemLog())
    assert [(r.format, r.sources) for r in runs] == [
        ("pair", ("p.txt",)),
        ("strict", ("s.txt", "sg.txt")),
    ]


def test_two_companions_of_one_format_is_an_error(fakes: Path) -> None:
    paths = [
        make(fakes, "r.txt", "pair run"),
        make(fakes, "g1.txt", "pair gold"),
        make(fakes, "g2.txt", "pair gold"),
    ]
    with pytest.raises(InputError) as exc:
        read_inputs(paths, None, ProblemLog())
    assert problems(exc) == [
        "g2.txt:0: file: a second pair gold file (the first is g1.txt); give one"
    ]


def test_companion_without_primary_is_an_error(fakes: Path) -> None:
    with pytest.raises(InputError) as exc:
        read_inputs([make(fakes, "g.txt", "pair gold")], None, ProblemLog())
    assert problems(exc) == [
        "g.txt:0: file: a pair gold file without a pair run file to go with it"
    ]


def test_required_companion_missing_is_an_error_for_each_primary(fakes: Path) -> None:
    paths = [make(fakes, "a.txt", "strict run"), make(fakes, "b.txt", "strict run")]
    with pytest.raises(InputError) as exc:
        read_inputs(paths, None, ProblemLog())
    assert problems(exc) == [
        "a.txt:0: file: a strict run file needs a gold file; none given",
        "b.txt:0: file: a strict run file needs a gold file; none given",
    ]


def test_all_detection_problems_are_reported_together_before_reading(fakes: Path) -> None:
    (fakes / "binary.bin").write_bytes(b"\x00\x01\x02")
    (fakes / "dir").mkdir()
    paths = [
        fakes / "missing.txt",
        make(fakes, "ok.txt", "pair run"),
        fakes / "binary.bin",
        make(fakes, "empty.txt", ""),
        make(fakes, "prose.txt", "hello"),
        fakes / "dir",
    ]
    with pytest.raises(InputError) as exc:
        read_inputs(paths, None, ProblemLog())
    assert problems(exc) == [
        "missing.txt:0: file: no such file",
        (
            "binary.bin:0: file: binary file, not a run (expected one of: native, tatrag, qa_pairs, ragas, "
            "deepeval, llamaindex, openinference, ranx, trec, beir, table; see docs/formats.md)"
        ),
        "empty.txt:0: file: empty file",
        (
            "prose.txt:0: file: unknown format (expected one of: native, tatrag, qa_pairs, ragas, "
            "deepeval, llamaindex, openinference, ranx, trec, beir, table; see docs/formats.md)"
        ),
        "dir:0: file: a folder, not a run (a BEIR dataset folder holds corpus.jsonl, "
        "queries.jsonl and qrels/)",
    ]


def test_forced_format_decides_roles_alone(fakes: Path) -> None:
    unclaimed = make(fakes, "x.txt", "anything at all")
    gold = make(fakes, "g.txt", "strict gold")
    runs = read_inputs([unclaimed, gold], "strict", ProblemLog())
    assert [(r.format, r.sources) for r in runs] == [("strict", ("x.txt", "g.txt"))]
    # auto-detection would have called x.txt an unknown format
    with pytest.raises(InputError):
        read_inputs([unclaimed, gold], None, ProblemLog())


def test_unknown_format_name_is_a_usage_error(fakes: Path) -> None:
    with pytest.raises(UsageError, match="unknown format 'nope'"):
        read_inputs([make(fakes, "a.txt", "pair run")], "nope", ProblemLog())
    with pytest.raises(UsageError, match="unknown format 'nope'"):
        module_for("nope")
    with pytest.raises(UsageError, match="no input files"):
        read_inputs([], None, ProblemLog())


def test_same_file_twice_is_read_once(fakes: Path) -> None:
    a = make(fakes, "a.txt", "pair run")
    runs = read_inputs([a, Path("a.txt"), fakes / "." / "a.txt"], None, ProblemLog())
    assert [r.sources for r in runs] == [("a.txt",)]


def test_sidecars_are_skipped_beside_their_run_and_refused_alone(fakes: Path) -> None:
    run = make(fakes, "r.txt", "pair run")
    sidecar = make(fakes, "r.txt.run.json", json.dumps({"name": "x"}))
    assert [r.sources for r in read_inputs([run, sidecar], None, ProblemLog())] == [("r.txt",)]
    with pytest.raises(InputError) as exc:
        read_inputs([sidecar], None, ProblemLog())
    assert problems(exc) == [
        "r.txt.run.json:0: file: run facts of r.txt, not a run: give that file instead"
    ]
    # a run that merely ends in .run.json (no file beside it) is read as a run
    lone = make(fakes, "other.run.json", "pair run")
    assert [r.sources for r in read_inputs([lone], None, ProblemLog())] == [("other.run.json",)]


def test_utf16_and_invalid_utf8_are_refused_but_a_cut_character_is_not(fakes: Path) -> None:
    (fakes / "u16.txt").write_bytes("pair run".encode("utf-16"))
    (fakes / "latin.txt").write_bytes("pair run caf\u00e9".encode("latin-1"))
    with pytest.raises(InputError) as exc:
        read_inputs([fakes / "u16.txt", fakes / "latin.txt"], None, ProblemLog())
    assert [p.problem.split(",")[0] for p in exc.value.problems] == [
        "UTF-16 text (save it as UTF-8)",
        "binary file",
    ]
    # a multi-byte character cut by the 64 KiB head limit is still text
    long = "pair run " + "x" * (64 * 1024 - 10) + "\u00e9\u00e9"
    (fakes / "long.txt").write_text(long, encoding="utf-8")
    assert len(read_inputs([fakes / "long.txt"], None, ProblemLog())) == 1


# -- the real readers ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("native_full.jsonl", "native"),
        ("native_full.json", "native"),
        ("table.csv", "table"),
        ("table.jsonl", "native"),
    ],
)
def test_good_files_are_detected(name: str, fmt: str) -> None:
    (run,) = read_inputs([GOOD / name], None, ProblemLog())
    assert run.format == fmt
    assert len(list(run.queries)) > 0


def test_parquet_is_detected_by_magic_bytes(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "run.data"  # no telling suffix
    pq.write_table(pa.table({"query_id": ["q"], "doc_id": ["d"]}), path)
    log = ProblemLog()
    (run,) = read_inputs([path], None, log)
    assert run.format == "table"
    assert [q.query_id for q in run.queries] == ["q"]
    log.raise_if_errors()


def test_one_qrels_file_is_shared_by_two_trec_runs(tmp_path: Path) -> None:
    a = make(tmp_path, "bm25.run", "1 Q0 d1 1 2.0 bm25\n1 Q0 d2 2 1.0 bm25\n")
    b = make(tmp_path, "dense.run", "1 Q0 d2 1 0.9 dense\n1 Q0 d1 2 0.8 dense\n")
    qrels = make(tmp_path, "qrels.txt", "1 0 d2 1\n1 0 d1 0\n")
    log = ProblemLog()
    runs = read_inputs([a, qrels, b], None, log)
    assert [r.format for r in runs] == ["trec", "trec"]
    by_run = {r.sources[0]: list(r.queries) for r in runs}
    log.raise_if_errors()
    for queries in by_run.values():
        assert [q.relevance for q in queries] == [{"d2": 1, "d1": 0}]
    assert [c.doc_id for c in by_run[str(b)][0].retrieved or ()] == ["d2", "d1"]
