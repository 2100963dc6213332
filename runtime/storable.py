"""Text the engine stores, made storable: no NUL and no lone UTF-16 surrogate.

PostgreSQL refuses NUL in ``text``/``jsonb`` and cannot encode a lone surrogate as UTF-8.
Model output, tool results and arguments, values tools set: none of it is the API
client's to fix, and one such character at the engine's commit would kill the session. So
the engine replaces both with U+FFFD (the replacement character) before anything is
stored or shown, the same for every store (the in-memory one accepts them, which would
hide the defect in tests). Paths are different: ``files.normalize_path`` refuses them,
since a file name quietly changed is a different file.
"""

from __future__ import annotations

import copy
import dataclasses
import re
from typing import Any, TypeVar

REPLACEMENT = "\ufffd"
# A valid surrogate pair is one astral character in a Python str, so any surrogate code
# point left is a lone one.
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")

T = TypeVar("T")


def storable_text(text: str) -> str:
    """``text`` with NUL and lone surrogates replaced by U+FFFD (the same object if clean)."""
    return _UNSTORABLE.sub(REPLACEMENT, text) if _UNSTORABLE.search(text) else text


def storable(value: T) -> T:
    """``value`` (JSON-like data or a dataclass) with every string made storable.

    Unchanged parts are returned as they are (no copy of clean data); changed dataclasses
    are shallow copies.
    """
    return _storable(value)  # type: ignore[no-any-return]


def make_storable_in_place(record: Any) -> Any:
    """Make the fields of the dataclass ``record`` storable in place (every holder of it
    sees the stored text) and return it."""
    for f in dataclasses.fields(record):
        value = getattr(record, f.name)
        clean = _storable(value)
        if clean is not value:
            object.__setattr__(record, f.name, clean)
    return record


def _storable(value: Any) -> Any:
    if isinstance(value, str):
        return storable_text(value)
    if isinstance(value, dict):
        items = [(_storable(k), _storable(v)) for k, v in value.items()]
        if all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(items, value.items(), strict=True)):
            return value
        return dict(items)
    if isinstance(value, list | tuple):
        cleaned = [_storable(item) for item in value]
        if all(c is o for c, o in zip(cleaned, value, strict=True)):
            return value
        return type(value)(cleaned) if isinstance(value, list) else tuple(cleaned)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {}
        for f in dataclasses.fields(value):
            item = getattr(value, f.name)
            clean = _storable(item)
            if clean is not item:
                changes[f.name] = clean
        if not changes:
            return value
        copied = copy.copy(value)
        for name, clean in changes.items():
            object.__setattr__(copied, name, clean)
        return copied
    return value
