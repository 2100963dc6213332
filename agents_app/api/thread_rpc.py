"""``POST /api/threads/{id}/rpc`` (spec 0.2.0 row I11): the reference's dev and test
passthrough, ``{method, args}`` → ``{result}``, calling one of the thread's methods.

Off unless ``STUDIO_THREAD_RPC`` is set: then it answers 404 ``Not found`` as an unknown
thread route does (after the thread check, as ``endpoints.serve``; a malformed body is a 400
before that, as on every JSON route). When on, only a
loopback client may use it: a caller from another address, or a request that came through
a proxy (``X-Forwarded-For``, ``Forwarded`` or ``X-Real-IP``: a proxy on this host would
make every client look local), gets 403. It needs what posting needs (changing the
thread), and each method goes through the same service and the same usage limits as its
HTTP route, so the passthrough opens nothing the API does not.

The methods are the reference thread's that map onto our services (``METHODS``); any other
name is refused with a sentence listing them. ``args`` is an object of named arguments or
an array of them in the listed order.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from ninja import Field, Router, Schema
from pydantic import ConfigDict

from agents_app import selectors
from agents_app.api.authed import AuthedRequest
from agents_app.api.redacting import redacts_thread_data, request_redactors
from agents_app.api.responses import Out, Value
from agents_app.api.schemas import ERRORS
from agents_app.base.errors import Forbidden, Invalid, NotFound
from agents_app.models import Thread
from agents_app.services.access import limits
from agents_app.services.automation import owner_rights
from agents_app.services.sessions import lifecycle as sessions
from agents_app.services.threads import messages as message_service
from agents_app.services.threads import values as thread_values

router = Router(tags=["execution"])

PROXY_HEADERS = ("HTTP_X_FORWARDED_FOR", "HTTP_FORWARDED", "HTTP_X_REAL_IP")


class RpcIn(Schema):
    model_config = ConfigDict(extra="forbid")

    method: str = Field(..., min_length=1, max_length=100)
    args: list[Any] | dict[str, Any] | None = None


class RpcOut(Out):
    result: Value


@dataclass(frozen=True)
class Method:
    params: tuple[str, ...]
    required: tuple[str, ...]
    run: Callable[[AuthedRequest, Thread, dict[str, Any]], Any]


def _get_thread_meta(request: AuthedRequest, thread: Thread, args: dict[str, Any]) -> Any:
    return selectors.thread_detail(thread)


def _get_messages(request: AuthedRequest, thread: Thread, args: dict[str, Any]) -> Any:
    query = selectors.MessageQuery(
        limit=_int(args, "limit", 100, 1, 1000),
        offset=_int(args, "offset", 0, 0, 10_000_000),
        order="asc" if args.get("order") == "asc" else "desc",
        include_silent=bool(args.get("includeSilent", False)),
    )
    page, total, has_more = selectors.message_page(thread, query)
    return {"messages": page, "total": total, "hasMore": has_more}


def _send_message(request: AuthedRequest, thread: Thread, args: dict[str, Any]) -> Any:
    content, role = args["content"], args.get("role", "user")
    if not isinstance(content, str) or not isinstance(role, str):
        raise Invalid("sendMessage: content and role must be strings")
    poster = owner_rights.thread_to_post(str(thread.pk), request.auth)
    taken = limits.action_hit(
        "message_post", user=request.auth, api_key_id=getattr(request, "api_key_id", None)
    )
    try:
        posted = message_service.message_post(
            thread=poster,
            role=role,
            content=content,
            silent=bool(args.get("silent", False)),
            redactor=request_redactors(request).get(str(thread.pk)),
        )
    except BaseException:
        taken.refund()
        raise
    return posted.response


def _stop(request: AuthedRequest, thread: Thread, args: dict[str, Any]) -> Any:
    sessions.thread_stop(thread=thread)
    return {"status": "stopped"}


def _get_value(request: AuthedRequest, thread: Thread, args: dict[str, Any]) -> Any:
    key = args["key"]
    if not isinstance(key, str):
        raise Invalid("getValue: key must be a string")
    try:
        return selectors.value_get(thread, key).value
    except NotFound:
        return None  # the reference's state.getValue: null for a missing key


def _set_value(request: AuthedRequest, thread: Thread, args: dict[str, Any]) -> Any:
    key = args["key"]
    if not isinstance(key, str) or not key:
        raise Invalid("setValue: key must be a non-empty string")
    return thread_values.value_set(thread=thread, key=key, value=args["value"], previous_key=None)


METHODS: dict[str, Method] = {
    "getThreadMeta": Method((), (), _get_thread_meta),
    "getMessages": Method(("limit", "offset", "order", "includeSilent"), (), _get_messages),
    "sendMessage": Method(("content", "role", "silent"), ("content",), _send_message),
    "stop": Method((), (), _stop),
    "getValue": Method(("key",), ("key",), _get_value),
    "setValue": Method(("key", "value"), ("key", "value"), _set_value),
}


def _int(args: dict[str, Any], name: str, default: int, low: int, high: int) -> int:
    value = args.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise Invalid(f"{name} must be an integer from {low} to {high}")
    return value


def _named(method: str, spec: Method, args: list[Any] | dict[str, Any] | None) -> dict[str, Any]:
    if args is None:
        named: dict[str, Any] = {}
    elif isinstance(args, list):
        if len(args) > len(spec.params):
            raise Invalid(f"{method} takes at most {len(spec.params)} arguments, got {len(args)}")
        named = dict(zip(spec.params, args, strict=False))
    else:
        named = dict(args)
    unknown = sorted(set(named) - set(spec.params))
    if unknown:
        takes = ", ".join(spec.params) or "no arguments"
        raise Invalid(f"{method} does not take {', '.join(unknown)} (it takes {takes})")
    missing = [p for p in spec.required if p not in named]
    if missing:
        raise Invalid(f"{method} needs {', '.join(missing)}")
    return named


def enabled() -> bool:
    return bool(getattr(settings, "STUDIO_THREAD_RPC", False))


def is_loopback_client(request: AuthedRequest) -> bool:
    """A direct connection from this host: a loopback address and no proxy's headers."""
    if any(request.META.get(h) for h in PROXY_HEADERS):
        return False
    try:
        return ipaddress.ip_address(str(request.META.get("REMOTE_ADDR", ""))).is_loopback
    except ValueError:
        return False


@router.post(
    "/{thread_id}/rpc",
    response={200: RpcOut, **ERRORS},
    summary="Dev and test passthrough (off unless STUDIO_THREAD_RPC; loopback only)",
)
@redacts_thread_data
def thread_rpc(request: AuthedRequest, thread_id: str, payload: RpcIn) -> dict[str, Any]:
    # As an unknown thread route answers: the thread check, then 404 (endpoints.serve). The
    # body is checked before (by ninja, like every JSON body: no lone surrogates, the schema).
    thread = selectors.access_thread(thread_id, request.auth)
    if not enabled():
        raise NotFound("Not found")
    if not is_loopback_client(request):
        raise Forbidden("The rpc passthrough answers loopback clients only")
    spec = METHODS.get(payload.method)
    if spec is None:
        raise Invalid(
            f"Unknown rpc method {payload.method!r}: this server offers "
            f"{', '.join(sorted(METHODS))}"
        )
    return {"result": spec.run(request, thread, _named(payload.method, spec, payload.args))}
