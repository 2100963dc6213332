"""Automatic retrieval before each turn (docs/knowledge.md, "Automatic retrieval"): a prompt's
``knowledge:<name>`` entry with ``options: {"retrieve": {"topK": 4, "maxTokens": 1000}}`` has
the base searched for the latest person message before the model is asked, and the passages
that fit the token budget go into the system prompt as context. Here the pure parts: the
options and their save-time rules, the budget, and the text the model reads.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from runtime.core.definition_errors import DefinitionError

# The log a retrieval writes (kind ``tool``): the query, the passages and their scores.
RETRIEVAL_LOG = "knowledge retrieval"
TOP_K_DEFAULT, TOP_K_MAX = 4, 20
MAX_TOKENS_DEFAULT, MAX_TOKENS_MIN, MAX_TOKENS_MAX = 1000, 10, 16000
_RETRIEVE_KEYS = {"topK", "maxTokens"}


@dataclass(frozen=True)
class RetrieveOptions:
    top_k: int = TOP_K_DEFAULT
    max_tokens: int = MAX_TOKENS_DEFAULT


@dataclass(frozen=True)
class Retrieved:
    """One passage found before a turn, and whether it fit the budget (``included``)."""

    base: str
    text: str
    document: str
    heading: str
    page: int | None
    score: float
    tokens: int
    included: bool
    chunk_id: int | None = None


def estimate_tokens(text: str) -> int:
    """About four characters a token (English); the budget is a guide, not a meter."""
    return (len(text) + 3) // 4


def retrieve_options(options: dict[str, Any] | None) -> RetrieveOptions | None:
    """The entry's retrieval settings; ``None`` when it does not retrieve (checked at save)."""
    retrieve = (options or {}).get("retrieve")
    if not isinstance(retrieve, dict):
        return None
    return RetrieveOptions(
        top_k=int(retrieve.get("topK", TOP_K_DEFAULT)),
        max_tokens=int(retrieve.get("maxTokens", MAX_TOKENS_DEFAULT)),
    )


def _int_in(value: Any, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def option_errors(path: str, name: str, options: dict[str, Any]) -> list[DefinitionError]:
    """A ``knowledge:`` entry's options: only ``retrieve`` with ``topK`` and ``maxTokens``."""
    errs = [
        DefinitionError(
            path,
            f"'{name}' takes only the option retrieve ({{\"topK\", \"maxTokens\"}}), not '{k}'.",
        )
        for k in options
        if k != "retrieve"
    ]
    retrieve = options.get("retrieve")
    if "retrieve" not in options:
        return errs
    if not isinstance(retrieve, dict):
        return [*errs, DefinitionError(f"{path}.retrieve", "retrieve must be an object.")]
    errs += [
        DefinitionError(f"{path}.retrieve.{k}", f"retrieve takes topK and maxTokens, not '{k}'.")
        for k in retrieve
        if k not in _RETRIEVE_KEYS
    ]
    if "topK" in retrieve and not _int_in(retrieve["topK"], 1, TOP_K_MAX):
        errs.append(
            DefinitionError(
                f"{path}.retrieve.topK", f"topK must be a whole number from 1 to {TOP_K_MAX}."
            )
        )
    if "maxTokens" in retrieve and not _int_in(
        retrieve["maxTokens"], MAX_TOKENS_MIN, MAX_TOKENS_MAX
    ):
        errs.append(
            DefinitionError(
                f"{path}.retrieve.maxTokens",
                f"maxTokens must be a whole number from {MAX_TOKENS_MIN} to {MAX_TOKENS_MAX}.",
            )
        )
    return errs


def within_budget(found: list[Retrieved], max_tokens: int) -> list[Retrieved]:
    """``found`` (best first) with ``included`` set on those that fit ``max_tokens`` in all:
    a passage too long for what is left is skipped, a shorter one after it may still fit."""
    left, out = max_tokens, []
    for passage in found:
        fits = passage.tokens <= left
        left -= passage.tokens if fits else 0
        out.append(replace(passage, included=fits))
    return out


def where(passage: Retrieved) -> str:
    """Where a passage comes from, as a person would say it."""
    parts = [passage.document]
    if passage.heading:
        parts.append(passage.heading)
    if passage.page is not None:
        parts.append(f"page {passage.page}")
    return ", ".join(parts)


def context_text(passages: list[Retrieved]) -> str:
    """The system prompt's context block of the included passages ("" when none)."""
    shown = [p for p in passages if p.included]
    if not shown:
        return ""
    lines = [
        "Passages from the knowledge bases that may answer the latest message. Use them when "
        "they do, and say which document (and page or heading) an answer comes from:"
    ]
    for i, p in enumerate(shown, start=1):
        lines.append(f"\n[{i}] {where(p)} (knowledge base {p.base})\n{p.text}")
    return "\n".join(lines)
