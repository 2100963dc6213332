"""Reads that widen an id selection (spec 0.2.0 row I4): a message's whole work block, a
log's descendants through ``parent_log_id``.

A work block is the reference's: the contiguous run of assistant rows with tool calls and
tool rows around a requested one, in the thread's order, among rows of the same depth and
branch state (a sub-prompt's rows, one depth below, interleave with the calls of the
block above without ending it). A message outside such a run expands to itself.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from agents_app.models import Log, Message

# A log tree is a turn's sub-prompt calls: far shallower than this in practice.
MAX_LOG_GENERATIONS = 32
MAX_EXPANDED = 2000


def _in_block(role: str, tool_calls: object) -> bool:
    return role == Message.Role.TOOL or (role == Message.Role.ASSISTANT and bool(tool_calls))


def workblock_ids(thread_id: uuid.UUID, seeds: Iterable[uuid.UUID]) -> list[uuid.UUID]:
    """``seeds`` (ids of the thread's messages) and every message of their work blocks."""
    wanted = set(seeds)
    rows = list(
        Message.objects.filter(thread_id=thread_id, pk__in=wanted).values_list(
            "pk", "role", "tool_calls", "depth", "abandoned"
        )
    )
    expanded = {pk for pk, *_ in rows}
    lanes = {
        (depth, abandoned) for _, role, calls, depth, abandoned in rows if _in_block(role, calls)
    }
    for depth, abandoned in lanes:
        lane = list(
            Message.objects.filter(thread_id=thread_id, depth=depth, abandoned=abandoned)
            .order_by("created_at")
            .values_list("pk", "role", "tool_calls")
        )
        block: list[uuid.UUID] = []
        hit = False
        for pk, role, calls in [*lane, (None, "", None)]:  # a sentinel closes the last run
            if pk is not None and _in_block(role, calls):
                block.append(pk)
                hit = hit or pk in wanted
                continue
            if hit:
                expanded.update(block)
            block, hit = [], False
    return list(expanded)[:MAX_EXPANDED]


def log_descendant_ids(thread_ids: list[uuid.UUID], seeds: Iterable[uuid.UUID]) -> set[uuid.UUID]:
    """``seeds`` and every log of ``thread_ids`` whose ``parent_log_id`` chain reaches one."""
    found = set(seeds)
    frontier = set(found)
    for _ in range(MAX_LOG_GENERATIONS):
        if not frontier or len(found) >= MAX_EXPANDED:
            break
        children = set(
            Log.objects.filter(thread_id__in=thread_ids, parent_id__in=frontier).values_list(
                "pk", flat=True
            )
        )
        frontier = children - found
        found |= frontier
    return found
