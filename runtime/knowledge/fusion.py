"""Reciprocal rank fusion: several rankings of the same items made into one.

RRF (Cormack, Clarke and Büttcher, SIGIR 2009) scores an item ``sum(1 / (k + rank))`` over
the rankings it appears in (rank counted from 1). It reads ranks only, never the scores, so a
``ts_rank_cd`` figure and a cosine similarity, which live on unrelated scales, need no
normalising; ``k = 60`` is the paper's constant, which damps the weight of the very top
ranks so that an item both rankings place fairly high beats one that only one ranking
places first.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TypeVar

K = TypeVar("K", bound=Hashable)
RRF_K = 60


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[K]], k: int = RRF_K
) -> list[tuple[K, float]]:
    """The items of ``rankings`` (each best first) with their fused scores, best first; ties
    keep the order in which the items were first seen (the first ranking wins)."""
    scores: dict[K, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    order = {item: i for i, item in enumerate(scores)}
    return sorted(scores.items(), key=lambda pair: (-pair[1], order[pair[0]]))
