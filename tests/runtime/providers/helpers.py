"""Small helpers shared by the adapter tests."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from runtime.core.spec import ReasoningConfig
from runtime.providers.adapter import FinishDetails
from runtime.providers.base import (
    Provider,
    ProviderRequest,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    ToolCallDone,
    ToolCallStart,
    ToolSchema,
)


@dataclass
class Collected:
    """Everything one adapter call produced."""

    events: list[StreamEvent] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(e.text for e in self.events if isinstance(e, TextDelta))

    @property
    def reasoning(self) -> str:
        return "".join(e.text for e in self.events if isinstance(e, ReasoningDelta))

    @property
    def text_deltas(self) -> list[str]:
        return [e.text for e in self.events if isinstance(e, TextDelta)]

    @property
    def calls(self) -> list[ToolCallDone]:
        return [e for e in self.events if isinstance(e, ToolCallDone)]

    @property
    def starts(self) -> list[ToolCallStart]:
        return [e for e in self.events if isinstance(e, ToolCallStart)]

    def argument_deltas(self, call_id: str) -> list[str]:
        return [e.delta for e in self.events if isinstance(e, ToolCallDelta) and e.id == call_id]

    @property
    def finish(self) -> FinishDetails:
        last = self.events[-1]
        assert isinstance(last, FinishDetails), last
        return last


async def collect(provider: Provider, request: ProviderRequest) -> Collected:
    out = Collected()
    async for event in provider.stream(request):
        out.events.append(event)
    finishes = [e for e in out.events if isinstance(e, FinishDetails)]
    assert len(finishes) == 1 and out.events[-1] is finishes[0], "exactly one Finish, last"
    return out


def request(
    messages: list[dict[str, Any]],
    *,
    model: str = "test-model",
    system: str = "",
    tools: list[ToolSchema] | None = None,
    reasoning: ReasoningConfig | None = None,
    **kw: Any,
) -> ProviderRequest:
    return ProviderRequest(
        model=model,
        system=system,
        messages=messages,
        tools=tools or [],
        reasoning=reasoning,
        **kw,
    )


def user(text: Any) -> dict[str, Any]:
    return {"role": "user", "content": text}


def without(data: Any, *paths: str) -> Any:
    """A deep copy of ``data`` with dotted ``paths`` removed (``*`` matches every list item)."""
    data = copy.deepcopy(data)
    for dotted in paths:
        _drop(data, dotted.split("."))
    return data


def _drop(node: Any, keys: list[str]) -> None:
    head, rest = keys[0], keys[1:]
    if head == "*" and isinstance(node, list):
        for item in node:
            if rest:
                _drop(item, rest)
        return
    if isinstance(node, list) and head.isdigit() and int(head) < len(node):
        if rest:
            _drop(node[int(head)], rest)
        else:
            del node[int(head)]
        return
    if not isinstance(node, dict) or head not in node:
        return
    if rest:
        _drop(node[head], rest)
    else:
        del node[head]
