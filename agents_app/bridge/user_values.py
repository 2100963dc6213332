"""The user-values part of ``DjangoStore`` (spec 0.2.0 user KV; ``runtime/store/protocol.py``):
a thin async face over ``agents_app.services.threads.user_values``."""

from __future__ import annotations

from typing import Any

from asgiref.sync import sync_to_async

from agents_app.services.threads import user_values as service
from runtime.store.protocol import UserValueEntry, UserValuePage


class UserValueStoreMixin:
    """``get_user_value``, ``set_user_value`` and ``list_user_values`` over the ORM."""

    async def get_user_value(self, user_id: str, key: str) -> Any:
        return await sync_to_async(service.user_value_get)(user_id=user_id, key=key)

    async def set_user_value(self, user_id: str, key: str, value: Any, exact: Any = None) -> int:
        return await sync_to_async(service.user_value_set)(
            user_id=user_id, key=key, value=value, exact=exact
        )

    async def list_user_values(
        self, user_id: str, prefix: str = "", limit: int = 100, offset: int = 0
    ) -> UserValuePage:
        page = await sync_to_async(service.user_value_page)(
            user_id=user_id, prefix=prefix, limit=limit, offset=offset, exact=True
        )
        entries = [UserValueEntry(e["key"], e["value"], e["updated_at"]) for e in page.entries]
        return UserValuePage(entries, page.total)
