"""The user-scope part of ``DjangoStore`` (spec 0.2.0 user KV and user endpoints;
``runtime/store/protocol.py``): a thin async face over
``agents_app.services.threads.user_values`` and ``agents_app.services.users``. A value a
thread's code writes fires the user hook ``user_value_changed`` (``services/users/hooks.py``)."""

from __future__ import annotations

from typing import Any

from asgiref.sync import sync_to_async

from agents_app.services.threads import user_values as service
from agents_app.services.users import endpoints, hooks
from runtime.store.protocol import UserValueEntry, UserValuePage


class UserValueStoreMixin:
    """``get_user_value``, ``set_user_value``, ``list_user_values`` and
    ``call_user_endpoint`` over the ORM."""

    async def get_user_value(self, user_id: str, key: str) -> Any:
        return await sync_to_async(service.user_value_get)(user_id=user_id, key=key)

    async def set_user_value(self, user_id: str, key: str, value: Any, exact: Any = None) -> int:
        return await hooks.value_write(user_id, key, value, exact)

    async def list_user_values(
        self, user_id: str, prefix: str = "", limit: int = 100, offset: int = 0
    ) -> UserValuePage:
        page = await sync_to_async(service.user_value_page)(
            user_id=user_id, prefix=prefix, limit=limit, offset=offset, exact=True
        )
        entries = [UserValueEntry(e["key"], e["value"], e["updated_at"]) for e in page.entries]
        return UserValuePage(entries, page.total)

    async def call_user_endpoint(
        self, user_id: str, method: str, path: str, body: Any, thread_id: str
    ) -> Any:
        return await endpoints.call_from_thread(user_id, method, path, body, thread_id)
