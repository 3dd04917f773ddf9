"""The settings, declared once: the schema (schema.py), the seed-parity presets over it
(presets.py), the statistics' defaults (stat_defaults.py) and fusion's (fusion_defaults.py).
Pure Python: the CLI reads it before parsing arguments, and
`python -m rageval_core.settings docs/metrics.md` writes its table."""
