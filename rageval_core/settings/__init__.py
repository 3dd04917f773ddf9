"""The settings, declared once: the schema (schema.py), the seed-parity presets over it
(presets.py) and the statistics' defaults (stat_defaults.py). Pure Python: the CLI reads it
before parsing arguments, and `python -m rageval_core.settings docs/metrics.md` writes its table."""
