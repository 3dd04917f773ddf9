"""A run's evidence pair scores for the layers above the store (the dashboard imports these).

ensure_scored scores every (gold span, retrieved chunk) pair of a run for one scorer and
normalisation, once, with progress(done, total) per block of queries and a cancel event checked
between blocks; is_scored says whether they are kept already.
"""

from rageval_core.store.scores import ScoringCancelled, ensure_scored, is_scored

__all__ = ["ScoringCancelled", "ensure_scored", "is_scored"]
