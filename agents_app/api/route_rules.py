"""The gate every ``/api/`` route passes: its rule from ``permissions.API_ROUTES``.

Installed once over every mounted router (``install``): a route with no row in the table
stops the app at import, so a new route cannot ship without a decision about who may use
it. Permission rules are checked with authentication (each of the operation's auth
callables is wrapped, ninja's documented way to authorize), so a refused caller gets 403
before its body is even parsed; thread rules name the action that
``selectors.access_thread`` then checks against the thread's owner, inside the view.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.http import HttpRequest
from ninja import Router

from agents_app.base.errors import Forbidden
from agents_app.base.permissions import (
    API_ROUTES,
    InPerson,
    Perm,
    Public,
    Rule,
    ThreadRule,
    may,
    reset_route_thread_action,
    set_route_thread_action,
)


def route_paths(routers: Iterable[tuple[str, Router]]) -> list[tuple[str, str, Any]]:
    """Every (method, path, operation) the routers serve, paths as ``API_ROUTES`` spells them."""
    found = []
    for prefix, router in routers:
        for path, path_view in router.path_operations.items():
            for operation in path_view.operations:
                for method in operation.methods:
                    found.append((method, prefix + path, operation))
    return found


def refusal(rule: Perm) -> Forbidden:
    # The reference's words first (its clients match on them), then which permission.
    return Forbidden(f"Forbidden: Admin access required ({rule.describe()})")


class PermissionGate:
    """An auth callable that authenticates with ``inner``, then requires ``rule``'s
    permission of the user it found (raising ``Forbidden``: ninja answers it through our
    error handlers, as 403 ``{error}``)."""

    def __init__(self, rule: Perm, inner: Callable[[HttpRequest], Any]) -> None:
        self.rule = rule
        self.inner = inner

    def __call__(self, request: HttpRequest) -> Any:
        user = self.inner(request)
        if user and not all(may(user, codename) for codename in self.rule.codenames):
            raise refusal(self.rule)
        return user


class InPersonGate:
    """An auth callable that authenticates with ``inner`` and refuses an API key."""

    def __init__(self, rule: InPerson, inner: Callable[[HttpRequest], Any]) -> None:
        self.rule = rule
        self.inner = inner

    def __call__(self, request: HttpRequest) -> Any:
        user = self.inner(request)
        if user and getattr(request, "auth_type", None) == "api_key":
            raise Forbidden(self.rule.refusal)
        return user


def _gate(rule: Perm | InPerson, inner: Callable[[HttpRequest], Any]) -> Any:
    return PermissionGate(rule, inner) if isinstance(rule, Perm) else InPersonGate(rule, inner)


def _guard(rule: Rule, view: Callable[..., Any]) -> Callable[..., Any]:
    if inspect.iscoroutinefunction(view):

        @functools.wraps(view)
        async def guarded_async(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
            if not isinstance(rule, ThreadRule):
                return await view(request, *args, **kwargs)
            token = set_route_thread_action(rule.action)
            try:
                return await view(request, *args, **kwargs)
            finally:
                reset_route_thread_action(token)

        return guarded_async

    @functools.wraps(view)
    def guarded(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        if not isinstance(rule, ThreadRule):
            return view(request, *args, **kwargs)
        token = set_route_thread_action(rule.action)
        try:
            return view(request, *args, **kwargs)
        finally:
            reset_route_thread_action(token)

    return guarded


def install(
    routers: Iterable[tuple[str, Router]], default_auth: Sequence[Callable[[HttpRequest], Any]]
) -> None:
    """Wrap every operation's view in its rule's gate; refuse to start on a missing row."""
    missing = []
    seen: set[int] = set()
    for method, path, operation in route_paths(routers):
        rule = API_ROUTES.get((method, path))
        if rule is None:
            missing.append(f"{method} {path}")
            continue
        if id(operation) in seen:
            continue  # one operation serving several methods shares one rule per method
        seen.add(id(operation))
        problem = _inconsistent(rule, operation, path)
        if problem:
            missing.append(problem)
            continue
        if isinstance(rule, Perm | InPerson):
            # Set as the operation's own auth, which ninja keeps when it binds the router
            # (an operation without its own inherits the API's, which we wrap here).
            gates = [_gate(rule, cb) for cb in operation.auth_callbacks or default_auth]
            operation.auth_param = gates
            operation.auth_callbacks = gates
        rules = {API_ROUTES.get((m, path)) for m in operation.methods}
        if len(rules) > 1:  # one view, different rules per method: choose inside the gate
            operation.view_func = _by_method(path, operation.view_func)
        else:
            operation.view_func = _guard(rule, operation.view_func)
    if missing:
        raise ImproperlyConfigured(
            "API routes without a usable rule in agents_app.base.permissions.API_ROUTES: "
            + ", ".join(missing)
        )


def _inconsistent(rule: Rule, operation: Any, path: str) -> str | None:
    """Why ``rule`` cannot be enforced on ``operation`` (None when it can)."""
    rules = {API_ROUTES.get((m, path)) for m in operation.methods}
    if len(rules) > 1 and any(isinstance(r, Perm | InPerson) for r in rules):
        return f"{path} (one view, several methods, a permission rule: split the view)"
    if not isinstance(rule, Public) and operation.auth_param is None:
        return f"{path} (no authentication, but the rule needs a signed-in user)"
    return None


def _by_method(path: str, view: Callable[..., Any]) -> Callable[..., Any]:
    guarded = {m: _guard(API_ROUTES[(m, path)], view) for m in _methods_for(path)}

    if inspect.iscoroutinefunction(view):

        @functools.wraps(view)
        async def pick_async(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
            return await guarded[request.method or "GET"](request, *args, **kwargs)

        return pick_async

    @functools.wraps(view)
    def pick(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        return guarded[request.method or "GET"](request, *args, **kwargs)

    return pick


def _methods_for(path: str) -> list[str]:
    return [m for (m, p) in API_ROUTES if p == path]
