"""File-route matching for code-defined thread endpoints and controllers.

The registry gives each endpoint a method and a route derived from its file
(``files/[id].post.py`` → ``POST /files/{id}``, ``[*].py`` → catch-all, ``index``
→ the folder itself). A request path picks, among the routes of its method that
match, the most specific one: compared segment by segment from the left, a
static segment beats a ``{param}``, which beats the ``{*}`` catch-all.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from runtime.tools.controllers import ControllerDefinition
from runtime.tools.registry import EndpointDefinition, Registry
from runtime.tools.user_endpoints import UserEndpointDefinition

Routed = EndpointDefinition | ControllerDefinition | UserEndpointDefinition
Table = Literal["endpoints", "controllers", "user_endpoints"]

STATIC, PARAM, CATCH_ALL = 0, 1, 2


@dataclass(frozen=True)
class Route:
    method: str
    segments: tuple[str, ...]
    definition: Routed

    @property
    def rank(self) -> tuple[int, ...]:
        return tuple(_kind(s) for s in self.segments)


def _kind(segment: str) -> int:
    if segment == "{*}":
        return CATCH_ALL
    if segment.startswith("{") and segment.endswith("}"):
        return PARAM
    return STATIC


def split(path: str) -> tuple[str, ...]:
    return tuple(p for p in path.split("/") if p)


def compile_routes(registry: Registry, table: Table = "endpoints") -> list[Route]:
    definitions: dict[str, Routed] = getattr(registry, table)
    routes = [
        Route((e.method or "GET").upper(), split(e.route or "/" + e.name), e)
        for e in definitions.values()
    ]
    return sorted(routes, key=lambda r: r.rank)


@lru_cache(maxsize=16)
def _routes_for(registry_id: int, registry: Registry, table: Table) -> tuple[Route, ...]:
    return tuple(compile_routes(registry, table))


def _match(route: Route, parts: tuple[str, ...]) -> dict[str, str] | None:
    params: dict[str, str] = {}
    for i, segment in enumerate(route.segments):
        kind = _kind(segment)
        if kind == CATCH_ALL:
            if i >= len(parts):
                return None
            params["*"] = "/".join(parts[i:])
            return params
        if i >= len(parts):
            return None
        if kind == PARAM:
            params[segment[1:-1]] = parts[i]
        elif segment != parts[i]:
            return None
    return params if len(parts) == len(route.segments) else None


def resolve(
    registry: Registry, method: str, path: str
) -> tuple[EndpointDefinition, dict[str, str]] | None:
    """The endpoint serving ``method path`` (path relative to the thread) and its params."""
    found = _resolve(registry, "endpoints", method, path)
    if found is None:
        return None
    definition, params = found
    assert isinstance(definition, EndpointDefinition)
    return definition, params


def resolve_controller(
    registry: Registry, method: str, path: str
) -> tuple[ControllerDefinition, dict[str, str]] | None:
    """The controller serving ``method path`` (path relative to ``/api``) and its params."""
    found = _resolve(registry, "controllers", method, path)
    if found is None:
        return None
    definition, params = found
    assert isinstance(definition, ControllerDefinition)
    return definition, params


def resolve_user_endpoint(
    registry: Registry, method: str, path: str
) -> tuple[UserEndpointDefinition, dict[str, str]] | None:
    """The user endpoint serving ``method path`` (path relative to ``/api/users/me``)."""
    found = _resolve(registry, "user_endpoints", method, path)
    if found is None:
        return None
    definition, params = found
    assert isinstance(definition, UserEndpointDefinition)
    return definition, params


def methods_at(registry: Registry, table: Table, path: str) -> list[str]:
    """The methods some route of ``table`` serves at ``path`` (to tell 405 from 404)."""
    parts = split(path)
    routes = _routes_for(id(registry), registry, table)
    return sorted({r.method for r in routes if _match(r, parts) is not None})


def _resolve(
    registry: Registry, table: Table, method: str, path: str
) -> tuple[Routed, dict[str, str]] | None:
    parts = split(path)
    candidates = [
        (route.rank, route, params)
        for route in _routes_for(id(registry), registry, table)
        if route.method == method.upper() and (params := _match(route, parts)) is not None
    ]
    if not candidates:
        return None
    _, route, params = min(candidates, key=lambda c: c[0])
    return route.definition, params
