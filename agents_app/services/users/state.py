"""``UserState`` over the ORM (spec 0.2.0 row F1): one person's scope, what a user endpoint
(``agents_app.services.users.endpoints``) and a user hook (``hooks``) work with.

Every read and write names this person: their account-wide values
(``services/threads/user_values.py``, the store ``/api/users/me/kv`` shows), their env
(their own tier, then the instance's, as tools resolve it), the threads they may see and
their user event stream (``stream.py``). ``fetch`` lends a credential grant
(``grants.py``) to the user endpoint running, named by its route.

A value written here fires ``user_value_changed`` through ``on_value_changed``, which the
one building the state hands in (``endpoints``, ``hooks``): this module imports neither.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model

from agents_app import selectors
from agents_app.base.encryption import decrypt
from agents_app.base.errors import NotFound
from agents_app.models import EnvValue, Thread
from agents_app.services.threads import user_values
from agents_app.services.threads.messages import message_post
from agents_app.services.users import grants, serial, stream
from runtime.state import EnvNotFound
from runtime.store.protocol import ThreadUser, UserValueEntry, UserValuePage

ValueChanged = Callable[[ThreadUser, str, Any], Awaitable[None]]


def _account(user_id: str) -> Any:
    user = get_user_model().objects.filter(pk=user_id, is_active=True).first()
    if user is None:
        raise NotFound("No such user")
    return user


def _env(user_id: str, name: str) -> str:
    tiers = (
        EnvValue.objects.filter(scope=EnvValue.Scope.USER, user_id=user_id, key=name),
        EnvValue.objects.filter(scope=EnvValue.Scope.INSTANCE, key=name),
    )
    for rows in tiers:
        row = rows.first()
        if row is not None:
            return decrypt(row.ciphertext)
    raise EnvNotFound(name)


def _threads(user_id: str, limit: int, offset: int) -> list[dict[str, Any]]:
    filters = selectors.ThreadFilters(limit=max(1, min(limit, 100)), offset=max(0, offset))
    items, _, _ = selectors.thread_list(_account(user_id), filters)
    return items


def _thread_of(user_id: str, thread_id: str, action: Any) -> Thread:
    return selectors.access_thread(thread_id, _account(user_id), action=action)


def _messages(user_id: str, thread_id: str, limit: int, offset: int) -> list[dict[str, Any]]:
    thread = _thread_of(user_id, thread_id, "view")
    query = selectors.MessageQuery(limit=max(1, min(limit, 500)), offset=offset, order="asc")
    rows, _, _ = selectors.message_page(thread, query)
    return rows


def _post(user_id: str, thread_id: str, content: str, role: str) -> dict[str, Any]:
    thread = _thread_of(user_id, thread_id, "change")
    return dict(message_post(thread=thread, role=role, content=content).response)


@dataclass
class DjangoUserThread:
    """One of the person's threads (``UserState.thread(id)``): read its messages, post to it
    as the API does. Access is the person's: a thread they may not see is ``NotFound``."""

    user_id: str
    thread_id: str

    async def get_messages(self, limit: int = 100, offset: int = 0) -> list[dict[str, Any]]:
        return await sync_to_async(_messages)(self.user_id, self.thread_id, limit, offset)

    async def post_message(self, content: str, role: str = "user") -> dict[str, Any]:
        serial.check_thread_call(self.thread_id)  # the thread waiting for us: refused
        with serial.detached():  # the session it starts is not part of this call
            return await sync_to_async(_post)(self.user_id, self.thread_id, content, role)


@dataclass
class DjangoUserState:
    """A person's scope over the ORM (``runtime.tools.user_endpoints.UserState``). ``route``
    names the user endpoint running (a grant's ``allow.userEndpoints`` entry); a hook's
    state has none and cannot ``fetch``."""

    who: ThreadUser
    route: str | None = None
    on_value_changed: ValueChanged | None = field(default=None, repr=False)

    @property
    def user_id(self) -> str:
        return self.who.id

    def identity(self) -> ThreadUser:
        return ThreadUser(**self.who.to_dict())

    async def get_value(self, key: str) -> Any:
        return await sync_to_async(user_values.user_value_get)(user_id=self.user_id, key=key)

    async def set_value(self, key: str, value: Any) -> None:
        await sync_to_async(user_values.user_value_set)(user_id=self.user_id, key=key, value=value)
        if self.on_value_changed is not None:
            await self.on_value_changed(self.who, key, value)

    async def list_values(
        self, prefix: str = "", limit: int = 100, offset: int = 0
    ) -> UserValuePage:
        page = await sync_to_async(user_values.user_value_page)(
            user_id=self.user_id,
            prefix=prefix,
            limit=max(1, min(limit, user_values.LIST_MAX)),
            offset=max(0, offset),
            exact=True,
        )
        entries = [UserValueEntry(e["key"], e["value"], e["updated_at"]) for e in page.entries]
        return UserValuePage(entries, page.total)

    async def env(self, name: str) -> str:
        return await sync_to_async(_env)(self.user_id, name)

    async def list_threads(self, limit: int = 50, offset: int = 0) -> list[dict[str, Any]]:
        return await sync_to_async(_threads)(self.user_id, limit, offset)

    def thread(self, thread_id: str) -> DjangoUserThread:
        return DjangoUserThread(self.user_id, str(thread_id))

    async def emit(self, event: str, data: Any = None) -> None:
        stream.emit(int(self.user_id), event, data)

    async def clients(self) -> list[str]:
        return await sync_to_async(stream.client_ids)(int(self.user_id))

    async def send(self, client_id: str, frame: dict[str, Any]) -> bool:
        return await sync_to_async(stream.send)(int(self.user_id), client_id, frame)

    async def fetch(self, grant: str, url: str, method: str = "GET", **kwargs: Any) -> Any:
        if self.route is None:
            raise grants.GrantRefused("Only a user endpoint may fetch with a credential grant.")
        caller = ("userEndpoints", self.route.lstrip("/"))
        return await grants.grant_fetch(int(self.user_id), grant, caller, method, url, **kwargs)
