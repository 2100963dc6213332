"""Knowledge in a step (docs/knowledge.md): automatic retrieval before the model is asked, and
the sources a final reply cites.

- **Retrieval.** A prompt's ``knowledge:<name>`` entry with ``options.retrieve`` has the base
  searched for the latest person message; the passages that fit the entry's token budget are
  added to the system prompt (``runtime.knowledge.retrieval.context_text``). One search per
  person message and prompt (the steps of a turn reuse it), recorded as a ``tool`` log named
  ``knowledge retrieval`` holding the query, every passage found with its score, and whether
  it fit the budget: what the inspector shows.
- **Citations.** A reply that ends a turn (no tool calls) gets, in its ``citations``, the
  passages it was given: those retrieved, and those the knowledge search tools returned in
  this turn. Each names its document, heading or page, and the passage's id, which the chat
  opens (``static/chat/citations.js``).
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any, Protocol

from runtime.core.messages import new_id
from runtime.core.spec import PromptDefinition, ToolConfig
from runtime.deps import Deps
from runtime.knowledge.names import base_name
from runtime.knowledge.retrieval import (
    RETRIEVAL_LOG,
    Retrieved,
    context_text,
    estimate_tokens,
    retrieve_options,
    where,
    within_budget,
)
from runtime.store.protocol import LogRecord, ThreadRecord
from runtime.store.recorder import Batch, Recorder
from runtime.tools.knowledge_tools import KnowledgeUnavailable
from runtime.tools.toolset import OfferedTool

CITED_TEXT_MAX = 600


class Scope(Protocol):
    """What of a step's scope (``runtime.step.llm_half.Scope``) this module reads."""

    thread: ThreadRecord
    prompt: PromptDefinition
    tools: dict[str, OfferedTool]
    root_message_id: str | None
    parent_log_id: str | None


def latest_person_text(messages: list[dict[str, Any]]) -> str:
    """The text of the last ``user`` message of a request (its text parts joined)."""
    for message in reversed(messages):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content.strip()
        if isinstance(content, list):
            parts = [p.get("text", "") for p in content if isinstance(p, dict)]
            return " ".join(str(p) for p in parts if p).strip()
        return ""
    return ""


def _retrieving(scope: Scope) -> list[tuple[str, Any]]:
    out = []
    for entry in scope.prompt.tools or []:
        if isinstance(entry, ToolConfig):
            base, options = base_name(entry.name), retrieve_options(entry.options)
            if base is not None and options is not None:
                out.append((base, options))
    return out


def _source(passage: Retrieved | dict[str, Any]) -> dict[str, Any]:
    p = passage if isinstance(passage, dict) else asdict(passage)
    found = Retrieved(
        base=str(p.get("base", "")),
        text=str(p.get("text", "")),
        document=str(p.get("document", "")),
        heading=str(p.get("heading", "")),
        page=p.get("page") if isinstance(p.get("page"), int) else None,
        score=0.0,
        tokens=0,
        included=True,
    )
    return {
        "kind": "knowledge",
        "title": where(found),
        "passage": p.get("passage_id", p.get("chunk_id")),
        "document": found.document,
        "heading": found.heading,
        "page": found.page,
        "cited_text": found.text[:CITED_TEXT_MAX],
    }


class KnowledgeContext:
    """One session's retrievals (cached per thread, prompt and person message)."""

    def __init__(self, deps: Deps, recorder: Recorder) -> None:
        self.deps, self.recorder = deps, recorder
        self._found: dict[tuple[str, str, str], list[Retrieved]] = {}

    async def with_context(self, scope: Scope, messages: list[dict[str, Any]], system: str) -> str:
        """``system`` with the passages retrieved for the latest person message, if the
        prompt retrieves."""
        found = await self.retrieved(scope, messages)
        text = context_text(found)
        return f"{system}\n\n{text}" if text and system else text or system

    async def retrieved(self, scope: Scope, messages: list[dict[str, Any]]) -> list[Retrieved]:
        entries = _retrieving(scope)
        query = latest_person_text(messages) if entries else ""
        if not query or self.deps.knowledge is None:
            return []
        key = (scope.thread.id, scope.prompt.name, query)
        if key not in self._found:
            self._found[key] = await self._retrieve(scope, entries, query)
        return self._found[key]

    async def _retrieve(
        self, scope: Scope, entries: list[tuple[str, Any]], query: str
    ) -> list[Retrieved]:
        assert self.deps.knowledge is not None
        found: list[Retrieved] = []
        problems: list[str] = []
        for base, options in entries:
            try:
                cited = await self.deps.knowledge.search(
                    base, query, options.top_k, thread_id=scope.thread.id
                )
            except KnowledgeUnavailable as exc:
                problems.append(f"The knowledge base {base} could not be searched: {exc}")
                continue
            passages = [
                Retrieved(
                    base=base,
                    text=c.text,
                    document=c.document,
                    heading=c.heading,
                    page=c.page,
                    score=c.score,
                    tokens=estimate_tokens(c.text),
                    included=False,
                    chunk_id=c.passage_id,
                )
                for c in cited
            ]
            found += within_budget(passages, options.max_tokens)
        await self._log(scope, entries, query, found, problems)
        return found

    async def _log(
        self,
        scope: Scope,
        entries: list[tuple[str, Any]],
        query: str,
        found: list[Retrieved],
        problems: list[str],
    ) -> None:
        now = self.deps.clock.now()
        log = LogRecord(
            id=new_id(),
            thread_id=scope.thread.id,
            kind="tool",
            message_id=scope.root_message_id,
            parent_id=scope.parent_log_id,
            prompt_name=scope.prompt.name,
            tool_name=RETRIEVAL_LOG,
            request_body={
                "query": query,
                "bases": [
                    {"name": b, "topK": o.top_k, "maxTokens": o.max_tokens} for b, o in entries
                ],
            },
            response_body={"passages": [asdict(p) for p in found]},
            error=" ".join(problems),
            error_type="knowledge_unavailable" if problems else "",
            is_complete=True,
            created_at=now,
        )
        await self.recorder.commit(Batch(logs=[log]))

    def sources(self, scope: Scope, request_messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The knowledge a turn's final reply was given, as its ``citations``: the passages
        retrieved for it, then those the search tools returned since the person spoke."""
        query = latest_person_text(request_messages)
        out = [
            _source(p)
            for p in self._found.get((scope.thread.id, scope.prompt.name, query), [])
            if p.included
        ]
        for message in _since_person(request_messages):
            if message.get("role") != "tool" or message.get("is_error"):
                continue
            offered = scope.tools.get(str(message.get("name", "")))
            if offered is None or base_name(offered.entry.name) is None:
                continue
            base = base_name(offered.entry.name)
            for passage in _passages(message.get("content")):
                out.append(_source({**passage, "base": base}))
        seen: set[Any] = set()
        unique = []
        for source in out:
            mark = source["passage"] if source["passage"] is not None else source["cited_text"]
            if mark not in seen:
                seen.add(mark)
                unique.append(source)
        return unique


def _since_person(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].get("role") == "user":
            return messages[i + 1 :]
    return messages


def _passages(content: Any) -> list[dict[str, Any]]:
    if not isinstance(content, str):
        return []
    try:
        data = json.loads(content)
    except ValueError:
        return []
    passages = data.get("passages") if isinstance(data, dict) else None
    return [p for p in passages or [] if isinstance(p, dict)]
