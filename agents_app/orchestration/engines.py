"""Building the engine for this process: the Django store, a sink, the code registry, providers.

``build_engine`` is the one place that composes ``runtime.engine.Engine`` with
its Django collaborators; the session runner, thread creation, thread endpoints
and effects all use it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import httpx
from asgiref.sync import sync_to_async
from django.conf import settings
from django.utils.module_loading import import_string

from agents_app.base import faults
from agents_app.base.code_registry import get_registry
from agents_app.bridge import async_commit
from agents_app.bridge.store import DjangoStore
from agents_app.broadcast.events import LiveSink
from agents_app.services.access.mcp_tokens import DjangoMcpTokens
from agents_app.services.definitions.mcp_servers import DjangoMcpServers
from agents_app.services.definitions.model_catalog import key_withheld
from agents_app.services.doors.a2a_client import DjangoA2aAgents
from agents_app.services.knowledge.memory import LocalMemoryEmbedder
from agents_app.services.knowledge.tool_host import DjangoKnowledgeBases
from agents_app.services.sessions.subagents import DjangoHost
from runtime.deps import Limits
from runtime.engine import Engine
from runtime.mcp.client import McpConnector
from runtime.providers import ProviderRegistry
from runtime.providers.registry import install, store_env_lookup
from runtime.store.events import EventSink

T = TypeVar("T")

# A fault point on the engine's commit breaks the commit connection of the bridge.
faults.set_loop_connection_pid(async_commit.backend_pid)


def provider_registry(store: Any, http: httpx.AsyncClient | None = None) -> ProviderRegistry:
    """The ``test`` provider, the HTTP adapters when ``http`` is given, and any overrides.

    ``settings.STUDIO_PROVIDER_FACTORIES`` maps a provider name to a dotted path of a
    factory ``(ModelDefinition) -> Provider`` (the bench uses it for a clocked provider).
    """
    providers = ProviderRegistry()
    if http is not None:
        # The egress key rule at run time: the same decision as the studio's discovery.
        install(
            providers,
            http,
            env_lookup=store_env_lookup(store),
            key_rule=sync_to_async(key_withheld),
        )
    for name, path in getattr(settings, "STUDIO_PROVIDER_FACTORIES", {}).items():
        providers.register(name, import_string(path))
    return providers


def build_engine(
    *,
    sink: EventSink | None = None,
    store: Any = None,
    http: httpx.AsyncClient | None = None,
) -> Engine:
    store = store if store is not None else DjangoStore()
    return Engine(
        store,
        sink,
        registry=get_registry(),
        providers=provider_registry(store, http),
        subagent_host=DjangoHost(),
        mcp=McpConnector(DjangoMcpServers(), tokens=DjangoMcpTokens()),
        a2a=DjangoA2aAgents(),
        knowledge=DjangoKnowledgeBases(),
        memory=LocalMemoryEmbedder(),
        limits=Limits(
            tool_wait_seconds=settings.STUDIO_TOOL_WAIT_SECONDS,
            live_question_seconds=settings.STUDIO_MCP_LIVE_QUESTION_SECONDS,
        ),
    )


async def with_engine(fn: Callable[[Engine], Awaitable[T]], store: Any = None) -> T:
    """Run ``fn`` with an engine whose frames go to the thread's listeners (flushed after)."""
    sink = LiveSink()
    engine = build_engine(sink=sink, store=store)
    try:
        return await fn(engine)
    finally:
        try:
            await engine.settle()  # e.g. ``state.queue_tool`` from a thread endpoint
        finally:
            await sink.flush()
