"""User hooks (spec 0.2.0 row F5, §7): ``user_value_changed``, ``user_client_attached`` and
``user_client_detached``.

No prompt lists them: every registered implementation (``define_hook("user_value_changed",
fn)`` in ``agents/hooks/``) runs, in id order, with the person's ``UserState``:

- ``user_value_changed(user, key, value)``: a value of the person's account-wide store was
  set (``value``) or deleted (``None``), at any door: ``/api/users/me/kv``, a thread's
  ``state.set_user_value``, a user endpoint's ``user.set_value``;
- ``user_client_attached(user, client_id)`` / ``user_client_detached(user, client_id)``: a
  socket of the person's user event stream opened / closed (the socket calls
  ``client_attached`` / ``client_detached``).

They run in the person's scope, one at a time with their user endpoints
(``serial.user_scope``); one fired by a write inside a user endpoint runs inside that
endpoint's scope. A hook that fails is logged and skipped, as thread hooks are; a value a
``user_value_changed`` hook writes fires no hook again (no loops).
"""

from __future__ import annotations

import contextvars
import logging
from typing import Any

from asgiref.sync import async_to_sync, sync_to_async
from django.contrib.auth import get_user_model

from agents_app.base.code_registry import get_registry
from agents_app.services.threads import user_values
from agents_app.services.users import serial
from agents_app.services.users.identity import thread_user
from agents_app.services.users.state import DjangoUserState
from runtime.store.protocol import ThreadUser
from runtime.tools.registry import call_maybe_async

logger = logging.getLogger("agents_app.user_hooks")

# Set while user_value_changed hooks run: their own writes fire nothing (no loops).
_in_value_hook: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "in_user_value_hook", default=False
)


def _identity(user_id: Any) -> ThreadUser | None:
    if not str(user_id).isdigit():
        return None
    user = get_user_model().objects.filter(pk=user_id, is_active=True).first()
    return None if user is None else thread_user(user)


async def _run(hook: str, who: ThreadUser | str, *args: Any) -> None:
    definitions = get_registry().user_hooks(hook)
    if not definitions:
        return  # nothing registered: no lock, no query
    if not isinstance(who, ThreadUser):
        found = await sync_to_async(_identity)(who)
        if found is None:
            return
        who = found
    state = DjangoUserState(who, on_value_changed=value_changed)
    async with serial.inside_or_enter(who.id):
        for definition in definitions:
            try:
                await call_maybe_async(definition.fn, state, *args)
            except Exception as exc:  # a hook never breaks the write that fired it
                logger.warning("User hook %s (%s) failed: %s", definition.id, hook, exc)


async def value_changed(who: ThreadUser | str, key: str, value: Any) -> None:
    """Fire ``user_value_changed`` for a value already written (``None``: deleted)."""
    if _in_value_hook.get():
        return
    token = _in_value_hook.set(True)
    try:
        await _run("user_value_changed", who, key, value)
    finally:
        _in_value_hook.reset(token)


async def value_write(who: ThreadUser | str, key: str, value: Any, exact: Any = None) -> int:
    """Write a person's value (``None`` deletes) and fire ``user_value_changed``: the write
    every door that is not a user endpoint goes through (the API, a thread's code)."""
    user_id = who.id if isinstance(who, ThreadUser) else str(who)
    at = await sync_to_async(user_values.user_value_set)(
        user_id=user_id, key=key, value=value, exact=exact
    )
    await value_changed(who, key, value)
    return at


def value_write_sync(user_id: Any, key: str, value: Any) -> int:
    """``value_write`` for sync callers (the API's views); without a ``user_value_changed``
    hook registered, the write alone (no hop to async code)."""
    if not get_registry().user_hooks("user_value_changed"):
        return user_values.user_value_set(user_id=user_id, key=key, value=value)
    return async_to_sync(value_write)(str(user_id), key, value)


def client_attached(user_id: int, client_id: str) -> None:
    """A user-stream socket opened (the socket calls it; sync, from its DB thread)."""
    async_to_sync(_run)("user_client_attached", str(user_id), client_id)


def client_detached(user_id: int, client_id: str) -> None:
    """A user-stream socket closed (the socket calls it; sync, from its DB thread)."""
    async_to_sync(_run)("user_client_detached", str(user_id), client_id)
