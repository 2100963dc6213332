"""Eval dataset files as JSON Lines (docs/observability.md, "Dataset files"): the same
dataset as the JSON file, one object a line, so a repository's diff shows one line per case
changed and a large set can be appended to. The first line is the file's head (``format``,
``version``, ``name``, ``description``: everything but ``cases``); every later line is one
case. ``files.read_file`` checks the result exactly as it checks a JSON file."""

from __future__ import annotations

import json
from typing import Any

from agents_app.base.errors import Invalid


def to_lines(data: dict[str, Any]) -> str:
    """``data`` (as ``files.dataset_data`` gives it) as JSON Lines."""
    head = {k: v for k, v in data.items() if k != "cases"}
    rows = [head, *data["cases"]]
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def looks_like_lines(text: str) -> bool:
    """Whether ``text`` is JSON Lines: its first line alone is a whole object without
    ``cases``. A JSON file's first line is ``{`` (or the whole file, cases included)."""
    first = text.lstrip().split("\n", 1)[0]
    try:
        head = json.loads(first)
    except ValueError:
        return False
    return isinstance(head, dict) and "cases" not in head and first.strip() != text.strip()


def from_lines(text: str) -> dict[str, Any]:
    """A JSON Lines dataset as the JSON file's object; ``Invalid`` naming the line."""
    lines = [(n, line) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
    rows: list[tuple[int, Any]] = []
    for number, line in lines:
        try:
            rows.append((number, json.loads(line)))
        except ValueError as exc:
            raise Invalid(f"Line {number} is not JSON: {exc}") from None
    head = rows[0][1]
    cases = []
    for number, row in rows[1:]:
        if not isinstance(row, dict):
            raise Invalid(f"Line {number}: a case is an object with a name, messages and checks.")
        cases.append(row)
    return {**head, "cases": cases}
