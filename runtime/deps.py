"""The collaborators an engine is built from (passed in, never global)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from runtime.core.messages import Clock
from runtime.core.waits import DEFAULT_LIVE_QUESTION_SECONDS, DEFAULT_WAIT_SECONDS
from runtime.mcp.servers import McpTools
from runtime.providers import ProviderRegistry
from runtime.providers.retry import RetryPolicy, Sleep
from runtime.store.events import EventSink, NullSink
from runtime.store.protocol import Store
from runtime.tools.a2a_tools import A2aAgents
from runtime.tools.knowledge_tools import KnowledgeBases
from runtime.tools.memory_tools import MemoryEmbedder
from runtime.tools.registry import Registry

# The reference's limits (``runtime.loop.stops`` checks them).
MAX_TOTAL_STEPS = 250
MAX_SESSION_TURNS = 250
REPEATED_TOOL_ERRORS = 8


@dataclass(slots=True)
class Limits:
    """Safety limits (the reference's numbers by default).

    ``retry`` is the attempt ladder of every LLM request: attempts per model,
    backoff, and the first-chunk / stall guards (``RetryPolicy``).
    """

    max_total_steps: int = MAX_TOTAL_STEPS
    max_session_turns: int = MAX_SESSION_TURNS
    repeated_tool_errors: int = REPEATED_TOOL_ERRORS
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    # How long a call waiting for approval or for the client waits before it times out
    # (a tool entry's ``waitTimeoutSeconds`` overrides it).
    tool_wait_seconds: int = DEFAULT_WAIT_SECONDS
    # How long a 2025-era MCP server's question, asked in the middle of its call, holds the
    # call open for the person's answer; then the server is told "cancel".
    live_question_seconds: int = DEFAULT_LIVE_QUESTION_SECONDS


@dataclass(slots=True)
class Deps:
    """Store, event sink, code registry, providers, clock, limits, and how to wait.

    ``sleep`` is what the attempt ladder awaits between attempts (tests pass a
    recorder that returns at once).
    """

    store: Store
    sink: EventSink = field(default_factory=NullSink)
    registry: Registry = field(default_factory=Registry)
    providers: ProviderRegistry = field(default_factory=ProviderRegistry)
    clock: Clock = field(default_factory=Clock)
    limits: Limits = field(default_factory=Limits)
    sleep: Sleep = asyncio.sleep
    # ``mcp:<server>/<tool>`` tools; without it such names resolve to nothing.
    mcp: McpTools | None = None
    # ``a2a:<name>`` tools (remote A2A agents); without it such names resolve to nothing.
    a2a: A2aAgents | None = None
    # ``knowledge:<name>`` tools (knowledge bases); without it such names resolve to nothing.
    knowledge: KnowledgeBases | None = None
    # ``memory:person`` recall by meaning (``runtime.tools.memory_tools``); without it, by words.
    memory: MemoryEmbedder | None = None
