"""The kept price table (``price_table.json``): prices per vendor for models whose definition
gives none, with long-context tiers. Read once per process; ``lookup`` is the one way in."""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any

TABLE = Path(__file__).with_name("price_table.json")
# A dated or floating alias of a listed id: claude-sonnet-4-5-20250929, gpt-4o-mini-2024-07-18.
_SUFFIX = re.compile(r"-(\d{8}|\d{4}-\d{2}-\d{2}|latest)$")


@functools.cache
def table() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(TABLE.read_text())
    return loaded


def lookup(provider: str, model_id: str) -> dict[str, Any] | None:
    """The table's entry for ``model_id`` of ``provider`` (``None``: not listed)."""
    models = table()["vendors"].get(provider, {}).get("models", {})
    entry = models.get(model_id) or models.get(_SUFFIX.sub("", model_id))
    return dict(entry) if entry else None


def as_of() -> str:
    return str(table()["as_of"])
