"""Readers of run files, one module per format; read_inputs() detects formats and groups files."""

from rageval_core.formats.detect import FORMATS, module_for, read_inputs

__all__ = ["FORMATS", "module_for", "read_inputs"]
