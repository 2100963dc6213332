"""One GET to a vendor's model listing, with the adapters' error mapping.

The key goes in a header built here at send time and is scrubbed from every error text
(``errors.from_response`` / ``from_transport`` redact it), exactly as ``HTTPAdapter`` does
for chat requests.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import httpx

from runtime.providers import errors

# A vendor that keeps answering "more" must not keep us paging for ever.
MAX_PAGES = 50


async def get_json(
    client: httpx.AsyncClient,
    vendor: str,
    url: str,
    *,
    headers: Mapping[str, str],
    params: Mapping[str, str] | None = None,
    key: str | None = None,
) -> Any:
    """The decoded JSON body of ``GET url``; a non-2xx answer or a broken connection
    raises ``AdapterError`` (classified, key redacted)."""
    failure: errors.AdapterError | None = None
    payload: Any = None
    try:
        response = await client.get(
            url, headers={"accept": "application/json", **headers}, params=params
        )
        if response.status_code >= 400:
            failure = errors.from_response(
                vendor, response.status_code, response.content, response.headers, (key,)
            )
        else:
            try:
                payload = json.loads(response.content)
            except ValueError:
                failure = errors.malformed(vendor, "the model list is not JSON")
    except httpx.HTTPError as exc:
        failure = errors.from_transport(vendor, exc, (key,))
    # Raised outside the handler: httpx errors hold the request, which holds the key.
    if failure is not None:
        raise failure
    if not isinstance(payload, dict):
        raise errors.malformed(vendor, "the model list is not an object")
    return payload


def as_int(value: Any) -> int | None:
    """A positive integer, or ``None`` (vendors send 0 or null for "unknown")."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float) and value > 0:
        return int(value)
    return None
