"""``define_user_endpoint``: spec 0.2.0 user endpoints (row F2) and the ``UserState`` they get
(row F1).

A user endpoint is ``handler(request, user, params)``: code that runs in one person's
scope, not in a thread. Files under ``agents/users/`` are discovered like thread endpoints
(``agents/users/profile.py`` → ``GET /profile``, ``notes/[id].put.py`` → ``PUT
/notes/{id}``, ``[*]`` a catch-all) and served at ``/api/users/me/<route>`` (the caller's
own scope) and, for admins, ``/api/users/{id}/<route>`` (another person's). Thread code
reaches them with ``await (await state.user()).call(method, path, body)``, in the thread
owner's scope. The web layer serves them; nothing here knows about Django.

Calls are serialized per user (spec §2.1): one user endpoint (or user hook) of a person runs
at a time. A call that would wait for itself (§2.2.3) fails with
``runtime.core.user_scope.ReentrantUserCall`` instead.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from runtime.core.user_scope import USER_HOOK_NAMES, ReentrantUserCall, UserEndpointError
from runtime.store.protocol import ThreadUser, UserValuePage

AnyFn = Callable[..., Any]

__all__ = [
    "USER_HOOK_NAMES",
    "ReentrantUserCall",
    "UserEndpointDefinition",
    "UserEndpointError",
    "UserRequest",
    "UserState",
    "UserThread",
    "define_user_endpoint",
]


@dataclass(frozen=True)
class UserEndpointDefinition:
    """A user endpoint ``handler(request, user, params)`` mounted under ``/api/users/me``."""

    name: str
    fn: AnyFn
    method: str | None = None
    route: str | None = None

    @property
    def description(self) -> str:
        """The handler's docstring, first line."""
        return (inspect.getdoc(self.fn) or "").split("\n", 1)[0]

    def located(self, method: str, route: str) -> UserEndpointDefinition:
        """A copy with the method and route derived from its file."""
        return dataclasses.replace(self, method=self.method or method, route=self.route or route)


def define_user_endpoint(
    handler: AnyFn | None = None,
    *,
    method: str | None = None,
    route: str | None = None,
    name: str | None = None,
) -> Any:
    """Define a user endpoint ``async handler(request: UserRequest, user: UserState, params)``.

    As ``define_thread_endpoint``: the method and route come from the file name under
    ``agents/users/`` unless given here. The handler returns a dict or list (200 JSON),
    ``(status, body)``, ``None`` (204), or raises ``UserEndpointError(status, message)``.
    """
    if method is not None and method.upper() not in ("GET", "POST", "PUT", "PATCH", "DELETE"):
        raise ValueError(f"define_user_endpoint: method {method!r} is not an HTTP method.")

    def build(target: AnyFn) -> UserEndpointDefinition:
        return UserEndpointDefinition(
            name or target.__name__, target, method.upper() if method else None, route
        )

    return build(handler) if handler is not None else build


@dataclass(frozen=True)
class UserRequest:
    """What a user endpoint is asked: the method, its path under ``/api/users/me``, the query,
    the JSON body (``None`` when there is none), the headers, who calls (``caller``: the
    signed-in person, an admin on the admin route, or the thread's owner) and, for a call
    from thread code, that thread's id."""

    method: str
    path: str
    body: Any = None
    query: Mapping[str, str] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)
    caller: ThreadUser | None = None
    thread_id: str | None = None


class UserThread(Protocol):
    """One of the person's threads, reached from their scope (``user.thread(id)``)."""

    thread_id: str

    async def get_messages(self, limit: int = 100, offset: int = 0) -> list[dict[str, Any]]:
        """The thread's messages, oldest first, as the API shows them."""
        ...

    async def post_message(self, content: str, role: str = "user") -> dict[str, Any]:
        """Post a message as the API's ``POST /messages`` does (a session takes it); refused
        with ``ReentrantUserCall`` when this thread is the one waiting for this call."""
        ...


class UserState(Protocol):
    """A person's scope (spec 0.2.0 ``UserState``), what a user endpoint and a user hook get."""

    user_id: str

    def identity(self) -> ThreadUser:
        """Who this scope belongs to (the ``ThreadUser`` fields)."""
        ...

    async def get_value(self, key: str) -> Any:
        """A value of the person's account-wide key-value store (``None`` when unset)."""
        ...

    async def set_value(self, key: str, value: Any) -> None:
        """Store a value (``None`` deletes it); fires ``user_value_changed``."""
        ...

    async def list_values(
        self, prefix: str = "", limit: int = 100, offset: int = 0
    ) -> UserValuePage:
        """The person's values whose key starts with ``prefix``, by key."""
        ...

    async def env(self, name: str) -> str:
        """The person's env value ``name`` (their own, else the instance's), as tools read
        env; ``EnvNotFound`` when neither defines it."""
        ...

    async def list_threads(self, limit: int = 50, offset: int = 0) -> list[dict[str, Any]]:
        """The threads this person may see, most recently active first."""
        ...

    def thread(self, thread_id: str) -> UserThread:
        """A handle to one of the person's threads (``NotFound`` on use when they may not
        see it)."""
        ...

    async def emit(self, event: str, data: Any = None) -> None:
        """Send ``{event, data}`` to every socket of the person's user event stream."""
        ...

    async def clients(self) -> list[str]:
        """The ids of the person's user-stream sockets open now."""
        ...

    async def send(self, client_id: str, frame: dict[str, Any]) -> bool:
        """Send ``frame`` to one socket; ``False`` when it is gone."""
        ...

    async def fetch(self, grant: str, url: str, method: str = "GET", **kwargs: Any) -> Any:
        """An HTTP request with the credential grant ``grant`` injected (the secret is never
        seen here); an ``httpx.Response``."""
        ...
