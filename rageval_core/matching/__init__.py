"""Evidence matching: normalisation with offset maps, the fuzzy and semantic scorers, their
process pool, the embedders and the numbers guard. Below the store: the store scores pairs with
these and keeps the scores."""
