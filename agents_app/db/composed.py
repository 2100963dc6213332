"""One SELECT composed from several modules' parts, read back by name.

A hot statement (a post's read under its thread's lock, a session start's queue read) joins
what several concepts need in one round trip. Each concept contributes a ``Part``: named
columns and the joins they need, written for the alias the composer hands it, so no module
assumes another's alias; the row is read back as ``{part: {column name: value}}``, so no
caller decodes by position and a column added to one part moves nothing in the others.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Part:
    """Named columns (``(name, SQL expression)``) and the joins they need."""

    columns: tuple[tuple[str, str], ...]
    joins: tuple[str, ...] = ()
    # Built once, not at every read of a row (issue #58).
    names: tuple[str, ...] = field(init=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "names", tuple(name for name, _ in self.columns))


@dataclass(frozen=True)
class Select:
    """``SELECT <every part's columns> FROM <table> <alias> <every part's joins> <tail>``."""

    table: str
    alias: str
    parts: Mapping[str, Part]
    tail: str  # WHERE …, ORDER BY …, with its own placeholders
    # Built once: these statements run on every post and session start.
    sql: str = field(init=False, compare=False)
    _spans: dict[str, slice] = field(init=False, repr=False, compare=False)
    _width: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        spans, start = {}, 0
        for name, part in self.parts.items():
            spans[name] = slice(start, start + len(part.columns))
            start += len(part.columns)
        columns = ", ".join(expr for part in self.parts.values() for _, expr in part.columns)
        joins = "".join(f" {j}" for part in self.parts.values() for j in part.joins)
        sql = f"SELECT {columns} FROM {self.table} {self.alias}{joins} {self.tail}"
        object.__setattr__(self, "_spans", spans)
        object.__setattr__(self, "_width", start)
        object.__setattr__(self, "sql", sql)

    def read(self, row: Sequence[Any]) -> dict[str, dict[str, Any]]:
        """``row`` as ``{part: {column name: value}}``."""
        if len(row) != self._width:
            raise ValueError(f"a row of {len(row)} values for {self._width} columns")
        return {
            name: dict(zip(part.names, row[self._spans[name]], strict=True))
            for name, part in self.parts.items()
        }

    def values(self, row: Sequence[Any], part: str) -> list[Any]:
        """One part's values in its column order (for readers that take a model's row)."""
        return list(row[self._spans[part]])
