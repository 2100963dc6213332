"""Composed SELECTs (issue #53): each part is written for the alias it is given and read
back by name, so a column added to one part moves nothing in another."""

from __future__ import annotations

import pytest

from agents_app.db.composed import Part, Select
from agents_app.services.access.limits import budget_part


def test_parts_are_read_back_by_name_whatever_their_neighbours_hold() -> None:
    first = Part((("a", "x.a"), ("b", "x.b")))
    second = Part((("c", "y.c"),), joins=("JOIN y ON y.id = x.y_id",))
    select = Select("things", "x", {"first": first, "second": second}, "WHERE x.id = %s")
    assert (
        select.sql == "SELECT x.a, x.b, y.c FROM things x JOIN y ON y.id = x.y_id WHERE x.id = %s"
    )
    assert select.read((1, 2, 3)) == {"first": {"a": 1, "b": 2}, "second": {"c": 3}}
    wider = Part((("a", "x.a"), ("b", "x.b"), ("new", "x.new")))
    grown = Select("things", "x", {"first": wider, "second": second}, "WHERE x.id = %s")
    assert grown.read((1, 2, 9, 3))["second"] == {"c": 3}
    with pytest.raises(ValueError, match="a row of 3 values for 4 columns"):
        grown.read((1, 2, 3))


def test_a_part_uses_the_alias_it_is_given() -> None:
    part = budget_part("threads_alias")
    assert all("threads_alias." in join for join in part.joins)
    assert " t." not in " ".join(part.joins)
