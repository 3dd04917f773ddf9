"""Evaluating a run: its settings and Report, evaluate(), the checks beside the numbers, the
TREC direct route, curves, the per-query drilldown, threshold tuning, judge calibration and the
seed-parity explanation."""
