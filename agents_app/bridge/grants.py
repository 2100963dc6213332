"""The credential-grant part of ``DjangoStore`` (spec 0.2.0 ``fetch(grant, url)``;
``runtime/store/protocol.py``): the engine's face over ``services.users.grants``."""

from __future__ import annotations

from typing import Any

import httpx

from agents_app.services.users import grants


class GrantStoreMixin:
    """``grant_fetch`` over the ORM and the egress policy."""

    async def grant_fetch(
        self,
        user_id: str | None,
        grant: str,
        caller: tuple[str, str],
        method: str,
        url: str,
        options: dict[str, Any],
    ) -> httpx.Response:
        owner = int(user_id) if user_id is not None else None
        try:
            return await grants.grant_fetch(owner, grant, caller, method, url, **options)
        except grants.GrantRefused as refused:
            # The engine's word for it: tool code catches PermissionError, and the tool
            # result says the sentence.
            raise PermissionError(refused.message) from None
