"""Running the spec's fourteen hooks with their signatures and return semantics.

A ``HookRunner`` is built for one prompt: its ``hooks`` list (or the agent's
when the prompt lists none), resolved against the registry by hook id, in list
order. A hook that raises is reported through ``on_error`` and skipped; the
one exception is ``HookBlocked`` from ``prefilter_llm_history``, which stops
the session before any spend (stop reason ``hook_blocked``). A hook that declares
one more parameter than its hook's arguments also gets the hook execution context
(``runtime.tools.hook_context``). Hooks a child agent requires (``parentHooks``,
``runtime.tools.parent_hooks``) run around those: ``before_parent`` ones first, then the
prompt's or agent's, then ``after_parent`` ones, each with the child's context.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from runtime.core.messages import Message, ToolCall, message_from_dict
from runtime.core.results import ToolResult, normalize, result_from_dict
from runtime.store.protocol import is_commit_failure
from runtime.tools.hook_context import HookExecutionContext, HookIds, context_for, takes_context
from runtime.tools.registry import HookDefinition, Registry, call_maybe_async

if TYPE_CHECKING:
    from runtime.tools.parent_hooks import RequiredHook

logger = logging.getLogger("runtime.tools.hooks")
ErrorReporter = Callable[[str, BaseException], Any]


class HookBlocked(Exception):
    """Raise from ``prefilter_llm_history`` to stop the session before the LLM call.

    The message is shown to the user as an assistant message.
    """

    block = True


def hook_ids(prompt_hooks: Sequence[str] | None, agent_hooks: Sequence[str] | None) -> HookIds:
    """The prompt's hook ids, or the agent's when the prompt declares none (and which)."""
    if prompt_hooks:
        return HookIds(list(prompt_hooks), "prompt")
    return HookIds(list(agent_hooks or []), "agent")


class HookRunner:
    """The hooks active for one prompt, ready to call."""

    def __init__(
        self,
        registry: Registry,
        ids: Sequence[str] = (),
        on_error: ErrorReporter | None = None,
        required: Sequence[RequiredHook] = (),
    ) -> None:
        # Each implementation with the context a child's requirement fixed (``None``: the
        # prompt's or agent's, built from the state when called).
        self._by_hook: dict[str, list[tuple[HookDefinition, HookExecutionContext | None]]] = {}
        self._add(registry, [r for r in required if r.stage == "before_parent"])
        for hook_id in ids:
            definition = registry.hooks.get(hook_id)
            if definition is None:
                logger.warning("Hook %r is listed but not registered; skipped", hook_id)
                continue
            self._by_hook.setdefault(definition.hook, []).append((definition, None))
        self._add(registry, [r for r in required if r.stage != "before_parent"])
        self._on_error = on_error
        self._source = ids.kind if isinstance(ids, HookIds) else "prompt"

    def _add(self, registry: Registry, required: Sequence[RequiredHook]) -> None:
        for requirement in required:
            # ``required_hooks`` checked each is registered; this registry is the same one.
            definition = registry.hooks[requirement.hook_id]
            self._by_hook.setdefault(definition.hook, []).append((definition, requirement.context))

    def context(self, state: Any) -> HookExecutionContext:
        """Why these hooks run, for ``state`` (the prompt or agent it runs under)."""
        prompt = getattr(state, "prompt_name", None) or ""
        return context_for(self._source, prompt, getattr(state, "agent_id", ""))

    async def _call(
        self,
        entry: tuple[HookDefinition, HookExecutionContext | None],
        state: Any,
        *args: Any,
    ) -> Any:
        definition, fixed = entry
        if takes_context(definition.fn, definition.hook):
            context = fixed if fixed is not None else self.context(state)
            return await call_maybe_async(definition.fn, state, *args, context)
        return await call_maybe_async(definition.fn, state, *args)

    def active(self, hook: str) -> bool:
        """Whether any hook of that name will run."""
        return hook in self._by_hook

    async def _each(self, hook: str, *args: Any) -> list[tuple[HookDefinition, Any]]:
        """Call every ``hook`` implementation with ``args``; skip (and report) failures."""
        out = []
        for entry in self._by_hook.get(hook, ()):
            definition = entry[0]
            try:
                out.append((definition, await self._call(entry, *args)))
            except HookBlocked:
                raise
            except Exception as exc:  # a hook must never break the session
                if is_commit_failure(exc):
                    raise
                await self._report(definition, exc)
        return out

    async def _chain(self, hook: str, state: Any, value: Any, *extra: Any) -> Any:
        """Thread ``value`` through each implementation; ``None`` keeps the previous value."""
        for entry in self._by_hook.get(hook, ()):
            definition = entry[0]
            try:
                returned = await self._call(entry, state, *extra, value)
            except HookBlocked:
                raise
            except Exception as exc:
                if is_commit_failure(exc):
                    raise
                await self._report(definition, exc)
                continue
            if returned is not None:
                value = returned
        return value

    async def _report(self, definition: HookDefinition, exc: BaseException) -> None:
        logger.warning("Hook %s (%s) failed: %s", definition.id, definition.hook, exc)
        if self._on_error is not None:
            await call_maybe_async(self._on_error, definition.id, exc)

    # --- the fourteen hooks ----------------------------------------------------------

    async def filter_messages(self, state: Any, messages: list[Message]) -> list[Message]:
        """Rows from storage → rows to build the request from."""
        return list(await self._chain("filter_messages", state, messages))

    async def prefilter_llm_history(
        self, state: Any, messages: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        """Chat-format messages → the messages sent (may raise ``HookBlocked``)."""
        return list(await self._chain("prefilter_llm_history", state, messages))

    async def after_system_message(self, state: Any, text: str) -> str:
        """Rendered system prompt → replacement (``None`` keeps it)."""
        return str(await self._chain("after_system_message", state, text))

    async def before_create_message(self, state: Any, message: Message) -> Message:
        """The row about to be inserted (as a dict for the hook) → the row inserted."""
        if not self.active("before_create_message"):
            return message
        data = await self._chain("before_create_message", state, message.to_dict())
        return _message_like(message, data)

    async def after_create_message(self, state: Any, message: Message) -> None:
        """Notification after an insert."""
        if self.active("after_create_message"):
            await self._each("after_create_message", state, message.to_dict())

    async def before_update_message(
        self, state: Any, message_id: str, updates: dict[str, Any]
    ) -> dict[str, Any]:
        """``(message_id, updates)`` → the updates applied."""
        if not self.active("before_update_message"):
            return updates
        return dict(await self._chain("before_update_message", state, updates, message_id))

    async def after_update_message(self, state: Any, message: Message) -> None:
        """Notification after an update, with the updated message."""
        if self.active("after_update_message"):
            await self._each("after_update_message", state, message)

    async def before_store_tool_result(
        self, state: Any, tool_call: ToolCall, result: ToolResult
    ) -> ToolResult:
        """``(tool_call, result dict)`` → the result stored."""
        if not self.active("before_store_tool_result"):
            return result
        data = await self._chain("before_store_tool_result", state, result.to_dict(), tool_call)
        return result_from_dict(data) if isinstance(data, dict) else result

    async def after_tool_call(
        self, state: Any, tool_call: ToolCall, result: ToolResult
    ) -> ToolResult:
        """``after_tool_call_success`` or ``_failure``: a replacement result or ``None``."""
        hook = "after_tool_call_success" if result.ok else "after_tool_call_failure"
        if not self.active(hook):
            return result
        replaced = await self._chain(hook, state, result, tool_call)
        return normalize(replaced)

    async def tool_call_started(
        self, state: Any, tool_call: ToolCall, progress: Any = None
    ) -> None:
        """Notification as a call starts (spec 0.2.0; ``progress``: its progress argument)."""
        if self.active("tool_call_started"):
            await self._each("tool_call_started", state, tool_call, progress)

    async def tool_call_done(self, state: Any, tool_call: ToolCall, result: ToolResult) -> None:
        """Notification as a call has its result, before the result hooks (spec 0.2.0)."""
        if self.active("tool_call_done"):
            await self._each("tool_call_done", state, tool_call, result)

    async def after_thread_created(self, state: Any) -> None:
        """Notification on a new thread, before anything runs on it."""
        await self._each("after_thread_created", state)

    async def after_subagent_created(self, state: Any, child_state: Any) -> None:
        """Notification on the parent right after a child thread was created."""
        await self._each("after_subagent_created", state, child_state)


def _message_like(original: Message, data: Any) -> Message:
    if isinstance(data, Message):
        return data
    if not isinstance(data, dict):
        return original
    merged = original.to_dict()
    merged.update(data)
    merged["id"] = original.id  # the id is the engine's; hooks may not change it
    return message_from_dict(merged)
