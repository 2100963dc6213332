"""A side-by-side diff of two definition versions, as rows a template renders.

Not ``difflib.HtmlDiff``: it writes inline styles and ``nowrap`` attributes, which the
Content-Security-Policy forbids, and it diffs JSON text, where a long system prompt is one
line full of ``\\n``. Definitions are first written as readable lines (``key: value``,
nested keys indented, multi-line text one line per line), then ``difflib.SequenceMatcher``
pairs the lines; changed pairs mark the words that differ. The template gives each row and
word a class, nothing else.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

RowKind = Literal["equal", "changed", "removed", "added", "skipped"]
CONTEXT = 3  # unchanged lines kept around each change; longer runs fold into one row


@dataclass
class Segment:
    text: str
    changed: bool = False


@dataclass
class DiffRow:
    kind: RowKind
    left_no: int | None = None
    right_no: int | None = None
    left: list[Segment] = field(default_factory=list)
    right: list[Segment] = field(default_factory=list)
    skipped: int = 0  # for "skipped": how many unchanged lines were folded


def readable_lines(value: Any, indent: str = "") -> list[str]:
    """``value`` as lines a person reads: ``key: value``, lists as ``- item``, text with line
    breaks as one ``| line`` per line under its key."""
    lines: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, dict | list) and item:
                lines.append(f"{indent}{key}:")
                lines += readable_lines(item, indent + "  ")
            elif isinstance(item, str) and "\n" in item:
                lines.append(f"{indent}{key}:")
                lines += [f"{indent}  | {line}" for line in item.split("\n")]
            else:
                lines.append(f"{indent}{key}: {_scalar(item)}")
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, dict | list) and item:
                sub = readable_lines(item, indent + "  ")
                lines.append(f"{indent}- {sub[0].lstrip()}")
                lines += sub[1:]
            else:
                lines += [f"{indent}- {line}" for line in _scalar(item).split("\n")]
    else:
        lines.append(indent + _scalar(value))
    return lines


def _scalar(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


_WORDS = re.compile(r"\s+|\w+|[^\w\s]")


def _marked(old: str, new: str) -> tuple[list[Segment], list[Segment]]:
    a, b = _WORDS.findall(old), _WORDS.findall(new)
    left: list[Segment] = []
    right: list[Segment] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if i2 > i1:
            left.append(Segment("".join(a[i1:i2]), op != "equal"))
        if j2 > j1:
            right.append(Segment("".join(b[j1:j2]), op != "equal"))
    return left, right


def side_by_side(old: Any, new: Any, context: int = CONTEXT) -> list[DiffRow]:
    """Rows pairing ``old`` (left) with ``new`` (right); unchanged runs folded to ``context``."""
    a = readable_lines(old) if old is not None else []
    b = readable_lines(new) if new is not None else []
    rows: list[DiffRow] = []
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            rows += _equal_run(a, i1, i2, j1, context, first=not rows, last=i2 == len(a))
            continue
        for k in range(max(i2 - i1, j2 - j1)):
            i, j = i1 + k, j1 + k
            left_line = a[i] if i < i2 else None
            right_line = b[j] if j < j2 else None
            if left_line is not None and right_line is not None:
                left, right = _marked(left_line, right_line)
                rows.append(DiffRow("changed", i + 1, j + 1, left, right))
            elif left_line is not None:
                rows.append(DiffRow("removed", i + 1, None, [Segment(left_line, True)]))
            elif right_line is not None:
                rows.append(DiffRow("added", None, j + 1, [], [Segment(right_line, True)]))
    return rows


def _equal_run(
    a: list[str], i1: int, i2: int, j1: int, context: int, *, first: bool, last: bool
) -> list[DiffRow]:
    def row(i: int) -> DiffRow:
        return DiffRow("equal", i + 1, j1 + (i - i1) + 1, [Segment(a[i])], [Segment(a[i])])

    head = 0 if first else context  # lines kept after the change above
    tail = 0 if last else context  # lines kept before the change below
    if i2 - i1 <= head + tail + 1:
        return [row(i) for i in range(i1, i2)]
    kept = [row(i) for i in range(i1, i1 + head)]
    kept.append(DiffRow("skipped", skipped=i2 - i1 - head - tail))
    kept += [row(i) for i in range(i2 - tail, i2)]
    return kept


def changed_count(rows: list[DiffRow]) -> int:
    return sum(1 for r in rows if r.kind in ("changed", "removed", "added"))
