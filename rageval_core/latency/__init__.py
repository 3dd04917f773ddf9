"""A run's latency, tokens and cost as a report and the Latency page show them (the arithmetic
over flat arrays is metrics/latency_cost.py)."""
