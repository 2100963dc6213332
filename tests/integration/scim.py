"""scim2-client (python-scim's SCIM 2.0 client: RFC 7643 models, RFC 7644 requests, and
checks of every answer) over httpx: its own network engine is written for the httpx2 fork,
so this is the same three methods over the httpx the project already uses."""

from __future__ import annotations

from typing import Any

import httpx
from scim2_client.client import BaseSyncSCIMClient, RawResponse
from scim2_models import Group, ScimProvider, User


class HttpxSCIMClient(BaseSyncSCIMClient):
    def __init__(self, client: httpx.Client, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.client = client

    def _stays_under_base_url(self, endpoint: str) -> bool:
        url = self.client.build_request("GET", endpoint).url
        base = self.client.base_url
        return (url.scheme, url.host, url.port) == (base.scheme, base.host, base.port) and str(
            url.path
        ).startswith(str(base.path).rstrip("/"))

    def _parse_json(self, response: RawResponse) -> Any:
        return response.json()  # type: ignore[attr-defined]

    def request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        return self.client.request(method, url, **kwargs)


def scim_client(base_url: str, token: str) -> HttpxSCIMClient:
    http = httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {token}"}, timeout=15)
    return HttpxSCIMClient(http, provider=ScimProvider(models=[User, Group]))
