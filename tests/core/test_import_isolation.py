"""rageval_core must stay importable without the UI stack (streamlit, plotly)."""

import subprocess
import sys


def test_every_core_module_imports_without_streamlit_or_plotly() -> None:
    code = (
        "import sys, importlib, pkgutil\n"
        "import rageval_core\n"
        "names = [m.name for m in pkgutil.walk_packages(rageval_core.__path__, 'rageval_core.')]\n"
        "for name in names: importlib.import_module(name)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('streamlit', 'plotly'))\n"
        "print(len(names)); print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    count, bad = out.stdout.splitlines()
    assert int(count) >= 25, f"only {count} core modules found: is the walk broken?"
    assert bad == "", f"rageval_core pulled in UI modules: {bad}"


def test_the_argument_parser_loads_no_heavy_module() -> None:
    """`rageval --help` (issue 18: <= 0.25 s) builds the whole parser: it must not import numpy,
    DuckDB, pyarrow or rapidfuzz (0.3-0.8 s before the first line of help)."""
    code = (
        "import sys\n"
        "from rageval_core.cli.dispatch import build_parser\n"
        "build_parser().format_help()\n"
        "for name in [n for n in ('numpy', 'duckdb', 'pyarrow', 'rapidfuzz') if n in sys.modules]:\n"
        "    print(name)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == [], f"the parser imported {out.stdout.split()}"
