"""The request parser: JSON bodies and query strings with only text PostgreSQL can store.

NUL characters and lone UTF-16 surrogates would fail deep in a write (a 500); refusing
them at the edge gives a 400 that names the field (``agents_app.base.storable_text``).
"""

from __future__ import annotations

import json
from typing import Any, cast

from django.http import HttpRequest
from django.utils.datastructures import MultiValueDict
from ninja.errors import HttpError
from ninja.parser import Parser

from agents_app.base.storable_text import NUL_ERROR, describe_unstorable, find_unstorable

__all__ = ["NUL_ERROR", "StrictParser", "UnstorableTextError", "check_storable", "has_nul"]


class UnstorableTextError(ValueError):
    """A JSON body with a string PostgreSQL cannot store; ``str(exc)`` is the sentence."""


def check_storable(data: Any) -> None:
    """Raise ``UnstorableTextError`` naming the first field that cannot be stored."""
    found = find_unstorable(data)
    if found:
        raise UnstorableTextError(describe_unstorable(found))


def has_nul(value: Any) -> bool:
    """Whether a JSON-like value holds a NUL anywhere (kept for callers of the old check)."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(has_nul(k) or has_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(has_nul(v) for v in value)
    return False


class StrictParser(Parser):
    def parse_body(self, request: HttpRequest) -> dict[str, Any]:
        data = json.loads(request.body)
        check_storable(data)
        return cast(dict[str, Any], data)

    def parse_querydict(
        self, data: MultiValueDict, list_fields: list[str], request: HttpRequest
    ) -> dict[str, Any]:
        result = super().parse_querydict(data, list_fields, request)
        found = find_unstorable(result)
        if found:
            raise HttpError(400, describe_unstorable(found))
        return result
