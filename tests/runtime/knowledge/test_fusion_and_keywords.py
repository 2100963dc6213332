"""Reciprocal rank fusion (k = 60), the SQLite keyword fallback, and ``knowledge:`` names."""

from __future__ import annotations

import pytest

from runtime.knowledge.fusion import reciprocal_rank_fusion
from runtime.knowledge.keywords import term_overlap_ranking
from runtime.knowledge.names import base_name, reference_errors, wire_name


def test_rrf_scores_are_the_sum_of_one_over_sixty_plus_rank() -> None:
    fused = dict(reciprocal_rank_fusion([["a", "b", "c"], ["c", "a"]]))
    assert fused["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert fused["b"] == pytest.approx(1 / 62)
    assert fused["c"] == pytest.approx(1 / 63 + 1 / 61)


def test_rrf_puts_what_both_rankings_place_well_above_one_rankings_first() -> None:
    keyword = ["only-keywords", "both", "x"]
    vector = ["only-vectors", "y", "both"]
    order = [item for item, _ in reciprocal_rank_fusion([keyword, vector])]
    assert order[0] == "both"
    # A tie (each first in one ranking) keeps the first ranking's item first.
    assert order[1:3] == ["only-keywords", "only-vectors"]


def test_rrf_of_nothing_is_nothing() -> None:
    assert reciprocal_rank_fusion([[], []]) == []


def test_term_overlap_ranks_rare_query_words_first_and_ignores_stop_words() -> None:
    texts = [
        "The office is open on weekdays.",
        "Invoices are paid within thirty days.",
        "The office sends invoices by post.",
        "Nothing to see here.",
    ]
    assert term_overlap_ranking("when are invoices paid", texts) == [1, 2]
    assert term_overlap_ranking("the and of", texts) == []


def test_knowledge_names() -> None:
    assert base_name("knowledge:handbook") == "handbook"
    assert base_name("knowledge:") is None and base_name("a2a:x") is None
    assert wire_name("team.handbook") == "search_team_handbook"
    assert reference_errors("tools.0", "knowledge:handbook", {"handbook"}) == []
    [err] = reference_errors("tools.0", "knowledge:nope", {"handbook"})
    assert (err.path, err.message) == ("tools.0", "Knowledge base 'nope' does not exist.")
