"""``defineController``: code-defined HTTP routes outside any thread.

A controller is ``handler(context)`` for a webhook, an integration's health check or any
route that is not about one thread. Files under ``agents/controllers/`` are discovered
like thread endpoints (``hooks/github.post.py`` → ``POST /hooks/github``, ``[id]`` a
parameter, ``[*]`` a catch-all) and mounted beneath ``/api/`` after every built-in route,
so a controller can never shadow one. The web layer (``agents_app.api.controllers``)
authenticates the request unless the controller is ``public`` and builds the
``ControllerContext``; nothing here knows about Django.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import SplitResult

AnyFn = Callable[..., Any]


@dataclass(frozen=True)
class ControllerDefinition:
    """A controller ``handler(context)`` mounted at ``/api<route>``."""

    name: str
    fn: AnyFn
    method: str | None = None
    route: str | None = None
    # False (default): only authenticated users (API key or signed-in session) reach it.
    # True: anyone may call it; the handler must check what it trusts (a webhook signature).
    public: bool = False
    # As for thread endpoints: True sends responses without the safe defaults for user content.
    active_content: bool = False

    @property
    def description(self) -> str:
        """The handler's docstring, first line."""
        return (inspect.getdoc(self.fn) or "").split("\n", 1)[0]

    def located(self, method: str, route: str) -> ControllerDefinition:
        """A copy with the method and route derived from its file."""
        return dataclasses.replace(self, method=self.method or method, route=self.route or route)


def define_controller(
    handler: AnyFn | None = None,
    *,
    method: str | None = None,
    route: str | None = None,
    name: str | None = None,
    public: bool = False,
    active_content: bool = False,
) -> Any:
    """Define a controller ``async handler(context: ControllerContext)``.

    Like ``define_thread_endpoint``: the method and route come from the file name when
    discovered (``agents/controllers/health.py`` → ``GET /api/health``) unless given.
    It returns what a thread endpoint may return (a response, ``(status, body)``,
    ``None`` for 204, a string, or JSON).
    """

    def build(target: AnyFn) -> ControllerDefinition:
        return ControllerDefinition(
            name or target.__name__, target, method, route, public, active_content
        )

    return build(handler) if handler is not None else build


@dataclass
class ControllerContext:
    """What a controller gets (the spec's ``ControllerContext``, in snake_case).

    ``req`` is the web framework's request (``req.auth`` is the user, ``None`` for an
    anonymous call to a public controller); ``url`` the parsed URL; ``agents``, ``prompts``
    and ``models`` map names to definition objects, ``tools`` and ``hooks`` to the code
    registry's definitions (the spec's virtual module registries). ``env`` holds no
    platform bindings here (read env values through the studio's own services), and
    ``config`` is empty: both exist so handlers written against the spec run.
    """

    req: Any
    params: dict[str, str]
    url: SplitResult
    env: dict[str, Any] = field(default_factory=dict)
    agents: Mapping[str, Any] = field(default_factory=dict)
    agent_names: list[str] = field(default_factory=list)
    prompts: Mapping[str, Any] = field(default_factory=dict)
    prompt_names: list[str] = field(default_factory=list)
    models: Mapping[str, Any] = field(default_factory=dict)
    model_names: list[str] = field(default_factory=list)
    tools: Mapping[str, Any] = field(default_factory=dict)
    hooks: Mapping[str, Any] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
