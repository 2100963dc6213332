"""File-route matching for code-defined thread endpoints (``define_thread_endpoint``).

The registry gives each endpoint a method and a route derived from its file
(``files/[id].post.py`` → ``POST /files/{id}``, ``[*].py`` → catch-all, ``index``
→ the folder itself). A request path picks, among the routes of its method that
match, the most specific one: compared segment by segment from the left, a
static segment beats a ``{param}``, which beats the ``{*}`` catch-all.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from runtime.registry import EndpointDefinition, Registry

STATIC, PARAM, CATCH_ALL = 0, 1, 2


@dataclass(frozen=True)
class Route:
    method: str
    segments: tuple[str, ...]
    definition: EndpointDefinition

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


def compile_routes(registry: Registry) -> list[Route]:
    routes = [
        Route((e.method or "GET").upper(), split(e.route or "/" + e.name), e)
        for e in registry.endpoints.values()
    ]
    return sorted(routes, key=lambda r: r.rank)


@lru_cache(maxsize=8)
def _routes_for(registry_id: int, registry: Registry) -> tuple[Route, ...]:
    return tuple(compile_routes(registry))


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
    parts = split(path)
    candidates = [
        (route.rank, route, params)
        for route in _routes_for(id(registry), registry)
        if route.method == method.upper() and (params := _match(route, parts)) is not None
    ]
    if not candidates:
        return None
    _, route, params = min(candidates, key=lambda c: c[0])
    return route.definition, params
