"""Running user endpoints (spec 0.2.0 row F2): the route a request names, in the person's
scope, one execution at a time per person (``serial``), for at most ``TIMEOUT_SECONDS``.

Two doors use it: ``/api/users/me/<path>`` and the admin route ``/api/users/{id}/<path>``
(``agents_app.api.user_endpoints``), and thread code's ``(await state.user()).call(…)``
(``call_from_thread``, through the Django store). Both get the same answers: the handler's
return value, or ``UserEndpointError`` with a status (404 no such route, 405 not with this
method, 409 a call that would wait for itself, 500 the handler failed, 504 it took too long).
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass
from typing import Any

from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model

from agents_app.base.code_registry import get_registry
from agents_app.base.endpoint_routes import methods_at, resolve_user_endpoint
from agents_app.base.errors import DomainError
from agents_app.services.users import hooks, serial
from agents_app.services.users.identity import thread_user
from agents_app.services.users.state import DjangoUserState
from runtime.core.user_scope import UserEndpointError
from runtime.store.protocol import ThreadUser
from runtime.tools.registry import call_maybe_async
from runtime.tools.user_endpoints import UserEndpointDefinition, UserRequest

logger = logging.getLogger("agents_app.user_endpoints")
TIMEOUT_SECONDS = 10


@dataclass(frozen=True)
class Found:
    definition: UserEndpointDefinition
    params: dict[str, str]


def find(method: str, path: str) -> Found:
    """The user endpoint serving ``method path``; ``UserEndpointError`` 404 or 405."""
    registry = get_registry()
    found = resolve_user_endpoint(registry, method, path)
    if found is not None:
        return Found(*found)
    allowed = methods_at(registry, "user_endpoints", path)
    shown = "/" + path.strip("/")
    if allowed:
        raise UserEndpointError(
            405,
            f"{method} is not allowed on the user endpoint {shown} (it answers {', '.join(allowed)}).",
        )
    raise UserEndpointError(404, f"No user endpoint at {shown}.")


async def run(who: ThreadUser, request: UserRequest, found: Found) -> Any:
    """Run ``found``'s handler for ``request`` in ``who``'s scope: what it returned."""
    definition = found.definition
    async with serial.user_scope(who.id, request.thread_id):
        state = DjangoUserState(who, route=definition.route, on_value_changed=hooks.value_changed)
        try:
            return await asyncio.wait_for(
                call_maybe_async(definition.fn, request, state, found.params), TIMEOUT_SECONDS
            )
        except UserEndpointError:
            raise
        except DomainError as exc:  # a thread it may not see, a grant refused …
            raise UserEndpointError(exc.status, exc.message) from None
        except TimeoutError:
            raise UserEndpointError(
                504, f"The user endpoint {definition.route} took longer than {TIMEOUT_SECONDS} s."
            ) from None
        except Exception as exc:
            # Neither sent nor logged: the exception's text (and its traceback's locals)
            # may hold what the handler read, secrets among it.
            logger.warning("User endpoint %s failed: %s", definition.route, type(exc).__name__)
            raise UserEndpointError(
                500, f"The user endpoint {definition.route} failed ({type(exc).__name__})."
            ) from None


def _owner(user_id: str) -> ThreadUser:
    user = (
        get_user_model().objects.filter(pk=user_id, is_active=True).first()
        if user_id.isdigit()
        else None
    )
    if user is None:
        raise UserEndpointError(404, "The thread's owner has no user scope (no active account).")
    return thread_user(user)


async def call_from_thread(user_id: str, method: str, path: str, body: Any, thread_id: str) -> Any:
    """``ThreadUser.call`` of thread ``thread_id``: the owner's user endpoint, as the owner."""
    who = await sync_to_async(_owner)(user_id)
    found = find(method, path)
    request = UserRequest(
        method=method, path="/" + path.strip("/"), body=body, caller=who, thread_id=thread_id
    )
    return answer(await run(who, request, found))


def answer(result: Any) -> Any:
    """A handler's return value as thread code gets it: the body (``None`` for 204), or
    ``UserEndpointError`` for an error status."""
    status, body = 200, result
    if isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], int):
        status, body = result
    elif hasattr(result, "status_code") and hasattr(result, "content"):  # a web response
        status, body = result.status_code, _decoded(result)
    if status >= 400:
        message = body.get("error") if isinstance(body, dict) else None
        raise UserEndpointError(
            status, str(message or f"The user endpoint answered {status}."), body
        )
    return body


def _decoded(response: Any) -> Any:
    text = bytes(response.content).decode("utf-8", "replace")
    if "json" in str(response.get("Content-Type", "")):
        try:
            return json.loads(text) if text else None
        except ValueError:
            return text
    return text or None
