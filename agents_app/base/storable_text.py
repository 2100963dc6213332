"""Text PostgreSQL cannot store, found before it reaches the database.

PostgreSQL refuses NUL (``\\u0000``) in ``text`` and ``jsonb``, and a lone UTF-16
surrogate (``\\ud800``–``\\udfff``, which JSON can spell as an escape) cannot be encoded
as UTF-8 at all. Either one in a stored value is a ``DataError`` or
``UnicodeEncodeError`` deep in a write: a 500 for what is the client's mistake. The API's
parser, the file API's JSON body and the studio's JSON fields check with ``find_unstorable``
and answer with a sentence that names the field.
"""

from __future__ import annotations

import re
from typing import Any

NUL_ERROR = "Text may not contain NUL (\\u0000) characters"
SURROGATE_ERROR = "Text may not contain lone UTF-16 surrogates (\\ud800-\\udfff)"

# A valid escaped pair ("\ud83d\ude00") decodes to one astral character, so any surrogate
# code point left in a decoded str is a lone one.
_SURROGATE = re.compile("[\ud800-\udfff]")
_KEY_SHOWN = 40


def text_problem(text: str) -> str | None:
    """Why ``text`` cannot be stored, or ``None``."""
    if "\x00" in text:
        return NUL_ERROR
    if _SURROGATE.search(text):
        return SURROGATE_ERROR
    return None


def find_unstorable(value: Any, where: tuple[str, ...] = ()) -> tuple[str, str] | None:
    """The first string in a JSON-like ``value`` that cannot be stored: ``(field, reason)``.

    ``field`` is a dotted path (``tags.0``, ``env.API_KEY``); a bad key is named by its
    parent and ``(key)``, never echoed, since the key itself is the unstorable text.
    """
    if isinstance(value, str):
        problem = text_problem(value)
        return (".".join(where), problem) if problem else None
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str) and (problem := text_problem(key)):
                return (".".join((*where, "(key)")), problem)
            found = find_unstorable(item, (*where, str(key)[:_KEY_SHOWN]))
            if found:
                return found
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            found = find_unstorable(item, (*where, str(index)))
            if found:
                return found
    return None


def describe_unstorable(found: tuple[str, str]) -> str:
    """``Invalid request: tags.0: Text may not contain …`` (the API's error sentence)."""
    field, reason = found
    return f"Invalid request: {field}: {reason}" if field else f"Invalid request: {reason}"
