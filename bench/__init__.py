"""Speed of rageval against pytrec_eval, ranx and difflib, in one run: ``make bench``.

``python -m bench`` runs every scenario (trec_e2e, recompute, matching_speed), prints one
table per scenario and writes docs/benchmarks.md from the results; ``--quick`` uses small sizes.
"""
