"""Text the engine stores, made storable: no NUL and no lone UTF-16 surrogate.

PostgreSQL refuses NUL in ``text``/``jsonb`` and cannot encode a lone surrogate as UTF-8.
Model output, tool results and arguments, values tools set: none of it is the API
client's to fix, and one such character at the engine's commit would kill the session. So
the engine replaces both with U+FFFD (the replacement character) before anything is
stored or shown, the same for every store (the in-memory one accepts them, which would
hide the defect in tests). Paths are different: ``files.normalize_path`` refuses them,
since a file name quietly changed is a different file.

The recorder makes every record storable at every commit, and a request log holds the
whole history, so the check must cost next to nothing on clean data: ``storable`` first
serializes the value with orjson (in C) and searches its output for ``\\u0000`` (orjson
refuses a lone surrogate outright); only a hit, or a value orjson cannot encode, walks the
value in Python to replace what it found. A walk per commit was a third of the
engine's time per step and grew with the session's length (issue #39). A request log's
body repeats the previous request's messages: ``storable_request`` checks only the ones
the previous check did not pass (``SeenPrefix``), so a step's check is the size of what the
step added, whatever the session's length.
"""

from __future__ import annotations

import copy
import dataclasses
import operator
import re
from collections.abc import Callable
from typing import Any, TypeVar

import orjson

REPLACEMENT = "\ufffd"
# A valid surrogate pair is one astral character in a Python str, so any surrogate code
# point left is a lone one.
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
# NUL in orjson's output. It also matches a text that spells a backslash and u0000
# (serialized "\\\\u0000"): that only costs a walk.
_NUL_JSON = b"\\u0000"
# Dataclasses through ``_fields`` (every field, whatever orjson's own rules), and keys that
# are not strings (ints) written rather than refused.
_ORJSON_OPTIONS = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_NON_STR_KEYS

T = TypeVar("T")


def storable_text(text: str) -> str:
    """``text`` with NUL and lone surrogates replaced by U+FFFD (the same object if clean)."""
    return _UNSTORABLE.sub(REPLACEMENT, text) if _UNSTORABLE.search(text) else text


def storable(value: T) -> T:
    """``value`` (JSON-like data or a dataclass) with every string made storable.

    Unchanged parts are returned as they are (no copy of clean data); changed dataclasses
    are shallow copies.
    """
    if isinstance(value, str):
        return storable_text(value)  # type: ignore[return-value]
    if value is None or is_storable(value):
        return value
    return _storable(value)  # type: ignore[no-any-return]


def is_storable(value: Any) -> bool:
    """Whether ``value`` (JSON-like data or a dataclass) holds no unstorable text: one pass
    of orjson and one substring search over its output, no Python walk."""
    try:
        text = orjson.dumps(value, default=_fields, option=_ORJSON_OPTIONS)
    except TypeError:  # a lone surrogate (or something orjson cannot write): walk
        return False
    return _NUL_JSON not in text


def _fields(value: Any) -> Any:
    """What the encoder sees of a non-JSON object: a dataclass's fields (all of them: orjson's
    own dataclass support skips names starting with ``_``); nothing of any other
    (``_storable`` leaves those unchanged too)."""
    kind = type(value)
    getter = _GETTERS.get(kind, _UNKNOWN)
    if getter is _UNKNOWN:
        getter = _GETTERS[kind] = _getter(kind)
    return getter(value) if getter is not None else None


_UNKNOWN = object()
# One C call per dataclass instance instead of ``dataclasses.fields`` and a getattr each.
_GETTERS: dict[type, Any] = {}


def _getter(kind: type) -> Callable[[Any], Any] | None:
    if not dataclasses.is_dataclass(kind):
        return None
    names = [f.name for f in dataclasses.fields(kind)]
    return operator.attrgetter(*names) if names else lambda _: None


class SeenPrefix:
    """The items of the last list a check passed, kept to skip them in the next list.

    A session's next request repeats the previous one's messages (the same objects:
    ``history.Converted``) before its new ones, so a check of a request body needs to look
    at the new ones only (issue #39: checking the whole history at every commit made a
    step's cost grow with the session). The items are held, so an id cannot be reused;
    message dicts are not changed in place once converted.
    """

    __slots__ = ("_seen",)

    def __init__(self) -> None:
        self._seen: list[Any] = []

    def new_items(self, items: list[Any]) -> list[Any]:
        """``items`` after the prefix seen last time (all of them if it is not a prefix)."""
        done = len(self._seen)
        if not done or len(items) < done or not all(map(operator.is_, items[:done], self._seen)):
            return items
        return items[done:]

    def passed(self, items: list[Any]) -> None:
        """Remember ``items`` as checked (an empty list forgets)."""
        self._seen = list(items)


def storable_request(body: T, seen: SeenPrefix) -> T:
    """``storable(body)`` for a request body whose ``messages`` may repeat the ones ``seen``
    passed last time: only the new messages and the other fields are checked."""
    messages = body.get("messages") if isinstance(body, dict) else None
    if not isinstance(messages, list):
        return storable(body)
    fresh = seen.new_items(messages)
    if is_storable({**body, "messages": fresh}):  # type: ignore[dict-item]
        seen.passed(messages)
        return body
    seen.passed([])
    return storable(body)


def make_storable_in_place(record: Any) -> Any:
    """Make the fields of the dataclass ``record`` storable in place (every holder of it
    sees the stored text) and return it."""
    if is_storable(record):
        return record
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
