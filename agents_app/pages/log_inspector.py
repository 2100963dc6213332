"""One request log as the studio's live inspector opens it: the request and response as
vendor JSON, tokens, cost in cents, timing, the ladder of retries and fallbacks, and the
request as a ``curl`` command with the key as a placeholder.

Stored bodies are already redacted (and base64 replaced by a size note) by the engine;
every text here passes the thread's redactor again, since a secret set after the log was
written would otherwise still be in it.
"""

from __future__ import annotations

import json
from typing import Any

from agents_app import selectors, wire
from agents_app.base.people_format import usd
from agents_app.models import Log, Thread
from agents_app.services.env.redaction import thread_redactor
from runtime.providers.curl import curl_command, wire_of
from runtime.providers.inspect import CannotRender
from runtime.providers.registry import ADAPTERS

# A ladder is a handful of rungs; the cap only guards against a corrupt cycle.
MAX_LADDER = 50
VIEWS = tuple(ADAPTERS)
VENDOR_NAMES = {
    "openai": "OpenAI",
    "anthropic": "Anthropic",
    "google": "Google",
    "openrouter": "OpenRouter",
}


def _pretty(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2) if value is not None else ""


def _ladder(row: Log) -> list[Log]:
    """Every attempt of the request ``row`` belongs to, first attempt first."""
    first, seen = row, {row.pk}
    while first.retry_of_id and len(seen) < MAX_LADDER:
        earlier = Log.objects.filter(pk=first.retry_of_id, thread_id=row.thread_id).first()
        if earlier is None or earlier.pk in seen:
            break
        first = earlier
        seen.add(earlier.pk)
    rungs = [first]
    while len(rungs) < MAX_LADDER:
        later = (
            Log.objects.filter(retry_of_id=rungs[-1].pk, thread_id=row.thread_id)
            .order_by("created_at")
            .first()
        )
        if later is None or later in rungs:
            break
        rungs.append(later)
    return rungs


def _rung(row: Log, current: Log, previous: Log | None) -> dict[str, Any]:
    fallback = previous is not None and previous.model != row.model
    return {
        "id": str(row.pk),
        "attempt": row.attempt,
        "model": row.model,
        "provider": row.provider,
        "error": row.error or None,
        "status_code": row.status_code,
        "latency_ms": row.latency_ms,
        "is_current": row.pk == current.pk,
        "kind": "first" if previous is None else ("fallback" if fallback else "retry"),
    }


def _request_view(row: Log, view: str | None) -> tuple[str, Any, str | None]:
    """``(shown_as, wire, note)``: the request as sent, or as ``view`` would receive it."""
    try:
        shown_as, request = wire_of(row.provider, row.request_body, view)
    except CannotRender as exc:
        return row.provider, row.request_body, str(exc)
    note = None
    if shown_as != row.provider:
        note = (
            f"A {row.provider or 'test'} model sends no HTTP request; "
            f"this is the same request as {VENDOR_NAMES.get(shown_as, shown_as)} would receive it."
        )
    return shown_as, request, note


def log_inspection(thread: Thread, log_id: str, view: str | None = None) -> dict[str, Any]:
    """The detail of one log of ``thread`` (``NotFound`` for another thread's log)."""
    row = selectors.log_row(thread, log_id)
    redactor = thread_redactor(str(thread.pk))
    item = redactor.data(wire.log_item(row, stopped=selectors.log_stopped(row)))
    data: dict[str, Any] = {**item}
    if row.kind == Log.Kind.LLM:
        shown_as, request, note = _request_view(row, view if view in VIEWS else None)
        try:
            curl = redactor.text(curl_command(row.provider, row.request_body, shown_as))
        except CannotRender:
            curl = ""
    else:
        shown_as, request, note, curl = "", row.request_body, None, ""
    ladder = _ladder(row) if row.kind == Log.Kind.LLM else [row]
    data.update(
        {
            "request_json": redactor.text(_pretty(request)),
            "response_json": redactor.text(_pretty(row.response_body)),
            "system_prompt": redactor.text(row.system_prompt or ""),
            "error": redactor.text(row.error) or None,
            "status_code": row.status_code,
            "shown_as": shown_as,
            "view_note": note,
            "views": list(VIEWS) if row.provider not in ADAPTERS and row.kind == "llm" else [],
            "curl": curl,
            "cost": _cost(row),
            "ladder": [
                _rung(rung, row, ladder[i - 1] if i else None) for i, rung in enumerate(ladder)
            ],
            "children": Log.objects.filter(parent=row, thread=thread).count(),
        }
    )
    # The ladder's errors and anything added later: the whole answer passes once more.
    redacted: dict[str, Any] = redactor.data(data)
    return redacted


def _cost(row: Log) -> dict[str, str]:
    """The log's amounts as people read them; "unknown" when no price was known for the
    model (docs/providers.md "Cost"), never "$0.00"."""
    if not row.cost_known:
        return {k: "unknown" for k in ("total", "input", "cached", "output", "exact")}
    return {
        "total": usd(row.cost_total),
        "input": usd(row.cost_input),
        "cached": usd(row.cost_cached),
        "output": usd(row.cost_output),
        "exact": f"{row.cost_total:.6f}",
    }
