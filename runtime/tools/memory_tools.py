"""``memory:person``: long-term memory of the person a thread belongs to (docs/knowledge.md,
"Memory").

Three native tools: ``remember`` (keep a fact), ``recall`` (the memories that best match a
query, by words and by meaning, fused by reciprocal rank fusion) and ``forget`` (drop one by
its id). A memory is one of the thread owner's account-wide values
(``ThreadState.set_user_value``) under ``memory/<id>``: ``{"text", "vector", "thread"}``, so
it is redacted like any value a thread writes, it follows the person into every thread and
agent, and no other account's thread can read it (the store names the owner on every call).
The vector comes from the host's ``MemoryEmbedder`` (``Deps.memory``); without one, recall
ranks by words alone.
"""

from __future__ import annotations

import base64
import json
import secrets
from array import array
from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field

from runtime.core.results import ToolResult, failure, success
from runtime.knowledge.fusion import RRF_K, reciprocal_rank_fusion
from runtime.knowledge.keywords import term_overlap_ranking
from runtime.knowledge.memory_names import MEMORY_KEY_PREFIX
from runtime.tools.registry import ToolDefinition

MEMORY_TEXT_MAX = 2000
RECALL_MAX = 20
SCAN_MAX = 500  # the memories a recall reads (the store pages at most this many)


class MemoryEmbedder(Protocol):
    """What the engine needs to search memories by meaning."""

    async def embed(self, text: str, kind: Literal["passage", "query"]) -> list[float]:
        """The text's normalised vector (a ``passage`` kept, or a ``query`` searched with)."""
        ...


class RememberArgs(BaseModel):
    text: str = Field(
        min_length=1,
        max_length=MEMORY_TEXT_MAX,
        description="The fact to keep about the person, as one short sentence.",
    )


class RecallArgs(BaseModel):
    query: str = Field(min_length=1, description="What to look for among the memories.")
    k: int = Field(default=5, ge=1, le=RECALL_MAX, description="How many memories to return.")


class ForgetArgs(BaseModel):
    id: str = Field(min_length=1, description="The id of the memory to forget (from recall).")


def pack(vector: list[float]) -> str:
    return base64.b64encode(array("f", vector).tobytes()).decode("ascii")


def unpack(packed: Any) -> list[float] | None:
    if not isinstance(packed, str) or not packed:
        return None
    try:
        return list(array("f", base64.b64decode(packed)))
    except ValueError:
        return None


def rank(
    query: str, query_vector: list[float] | None, texts: list[str], vectors: list[Any]
) -> list[tuple[int, float]]:
    """Indexes of ``texts`` that match ``query``, best first, with their fused scores: the
    words ranking (rarest words first) and, with vectors, cosine similarity, fused by RRF."""
    rankings = [term_overlap_ranking(query, texts)]
    if query_vector is not None:
        scored = []
        for i, packed in enumerate(vectors):
            vector = unpack(packed)
            if vector is not None and len(vector) == len(query_vector):
                scored.append((sum(a * b for a, b in zip(vector, query_vector, strict=True)), i))
        rankings.append([i for _, i in sorted(scored, key=lambda p: -p[0])])
    return reciprocal_rank_fusion(rankings, RRF_K)


def memory_tools(embedder: MemoryEmbedder | None) -> list[ToolDefinition]:
    """The three tools ``memory:person`` offers."""

    async def remember(state: Any, args: RememberArgs) -> ToolResult:
        text = args.text.strip()
        vector = await embedder.embed(text, "passage") if embedder is not None else None
        memory_id = secrets.token_hex(6)
        value = {"text": text, "vector": pack(vector) if vector else "", "thread": state.thread_id}
        try:
            await state.set_user_value(MEMORY_KEY_PREFIX + memory_id, value)
        except LookupError:
            return failure("This thread has no person to remember things about.")
        return success(json.dumps({"remembered": text, "id": memory_id}))

    async def recall(state: Any, args: RecallArgs) -> ToolResult:
        try:
            page = await state.list_user_values(MEMORY_KEY_PREFIX, limit=SCAN_MAX)
        except LookupError:
            return failure("This thread has no person, so nothing is remembered.")
        entries = [e for e in page.entries if isinstance(e.value, dict)]
        if not entries:
            return success("Nothing is remembered about this person yet.")
        query_vector = await embedder.embed(args.query, "query") if embedder is not None else None
        texts = [str(e.value.get("text", "")) for e in entries]
        found = rank(args.query, query_vector, texts, [e.value.get("vector") for e in entries])
        memories = [
            {
                "id": entries[i].key[len(MEMORY_KEY_PREFIX) :],
                "text": texts[i],
                "score": round(score, 5),
            }
            for i, score in found[: args.k]
        ]
        if not memories:
            return success("No memory matches that query.")
        return success(json.dumps({"memories": memories}, ensure_ascii=False))

    async def forget(state: Any, args: ForgetArgs) -> ToolResult:
        key = MEMORY_KEY_PREFIX + args.id.strip()
        try:
            if await state.get_user_value(key) is None:
                return failure(f"No memory has the id {args.id}.")
            await state.set_user_value(key, None)
        except LookupError:
            return failure("This thread has no person, so nothing is remembered.")
        return success(json.dumps({"forgotten": args.id}))

    return [
        ToolDefinition(
            "remember",
            "Keep a fact about the person you are talking with (a preference, their name, "
            "something they asked you to remember) for later conversations, in any thread.",
            RememberArgs,
            remember,
        ),
        ToolDefinition(
            "recall",
            "Search what you remember about the person you are talking with, by meaning. "
            "Returns memories with their ids.",
            RecallArgs,
            recall,
        ),
        ToolDefinition(
            "forget",
            "Forget one memory about the person, by its id (from recall), when it is wrong or "
            "they ask you to.",
            ForgetArgs,
            forget,
        ),
    ]
