"""rageval_core must stay importable without the UI stack (streamlit, plotly)."""

import subprocess
import sys

CORE_MODULES = [
    "rageval_core", "rageval_core.cli", "rageval_core.store", "rageval_core.formats",
    "rageval_core.formats.detect", "rageval_core.matching", "rageval_core.metrics",
    "rageval_core.ops", "rageval_core.demo",
]


def test_core_imports_without_streamlit_or_plotly() -> None:
    code = (
        "import sys, importlib\n"
        f"for m in {CORE_MODULES!r}: importlib.import_module(m)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('streamlit', 'plotly'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"rageval_core pulled in UI modules: {out.stdout}"
