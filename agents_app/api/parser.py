"""The request parser: JSON bodies and query strings with no NUL characters.

PostgreSQL cannot store NUL in text or JSON; rejecting it at the edge turns what
would be a database error (a 500) into a clear 400.
"""

from __future__ import annotations

import json
from typing import Any, cast

from django.http import HttpRequest
from django.utils.datastructures import MultiValueDict
from ninja.errors import HttpError
from ninja.parser import Parser

NUL_ERROR = "Text may not contain NUL (\\u0000) characters"


class NulError(ValueError):
    """A JSON body with a NUL character somewhere in its strings."""


def has_nul(value: Any) -> bool:
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
        if has_nul(data):
            raise NulError(NUL_ERROR)
        return cast(dict[str, Any], data)

    def parse_querydict(
        self, data: MultiValueDict, list_fields: list[str], request: HttpRequest
    ) -> dict[str, Any]:
        result = super().parse_querydict(data, list_fields, request)
        if has_nul(result):
            raise HttpError(400, NUL_ERROR)
        return result
