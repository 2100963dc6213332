"""Logs: one row per LLM request attempt or tool call (read-only)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html

from agents_app.admin.display import from_us
from agents_app.admin.env import secret_masker
from agents_app.admin.log_filters import EndedFilter, ErrorFilter, FinishedFilter
from agents_app.admin.log_sources import provider_tools_html, sources_html
from agents_app.admin.read_only import ReadOnlyAdmin
from agents_app.base.people_format import (
    REASONS,
    duration,
    failed_words,
    local_time,
    money,
    money_fine,
    reason,
)
from agents_app.models import Log
from agents_app.selectors import STOPPED_LOG_TYPE, log_stopped, with_stops

# A request whose model had no known price (docs/providers.md "Cost"): never "$0".
UNKNOWN_COST = "unknown"


def _masker(obj: Log) -> Callable[[str], str]:
    # One masker per page: it decrypts every stored secret once.
    mask: Callable[[str], str] = obj.__dict__.setdefault("_studio_mask", secret_masker())
    return mask


def _pre(obj: Log, text: str) -> str:
    return format_html('<pre class="studio-log">{}</pre>', _masker(obj)(text)) if text else "–"


@admin.register(Log)
class LogAdmin(ReadOnlyAdmin):
    # Newest first, and the columns that answer "what went wrong, what did it cost, how long"
    # before the rest, so Error, Cost and Latency fit at 1440 px (issue #40 item 9).
    list_display = (
        "when",
        "what",
        "shown_outcome",
        "shown_cost",
        "shown_latency",
        "total_tokens",
        "thread",
    )
    list_display_links = ("when",)
    ordering = ("-created_at",)
    list_filter = ("kind", "provider", FinishedFilter, ErrorFilter, EndedFilter)
    search_fields = ("thread__id", "model", "model_id", "prompt_name", "tool_name")
    list_select_related = ("thread__agent",)

    fieldsets = [
        (
            None,
            {
                "fields": (
                    "when",
                    "thread",
                    "kind",
                    ("provider", "model", "model_id"),
                    "prompt_name",
                    ("tool_name", "tool_call_id"),
                    ("attempt", "parent", "retry_of"),
                    "message_id",
                )
            },
        ),
        (
            "Result",
            {
                "fields": (
                    ("status_code", "shown_finish_reason", "shown_complete"),
                    ("error_type", "shown_error"),
                    ("shown_latency", "shown_first_token"),
                )
            },
        ),
        (
            "Tokens and cost (USD)",
            {
                "fields": (
                    ("input_tokens", "cached_tokens", "output_tokens", "reasoning_tokens"),
                    "total_tokens",
                    (
                        "shown_cost_input",
                        "shown_cost_cached",
                        "shown_cost_output",
                        "shown_cost_total",
                    ),
                )
            },
        ),
        (
            "Provider tools and sources",
            {
                "description": "Tools the model's vendor ran itself, and the pages the answer "
                "cites (character spans of the reply).",
                "fields": ("shown_provider_tools", "shown_sources"),
            },
        ),
        (
            "Request and response",
            {
                "description": "Stored secret env values are shown as [secret].",
                "fields": ("shown_system_prompt", "shown_request", "shown_response"),
            },
        ),
    ]
    readonly_fields = (
        "when",
        "shown_latency",
        "shown_first_token",
        "shown_cost_input",
        "shown_cost_cached",
        "shown_cost_output",
        "shown_cost_total",
        "shown_complete",
        "shown_finish_reason",
        "shown_error",
        "shown_system_prompt",
        "shown_request",
        "shown_response",
        "shown_provider_tools",
        "shown_sources",
    )

    def get_queryset(self, request: HttpRequest) -> QuerySet[Log]:
        return with_stops(super().get_queryset(request))

    @admin.display(description="When", ordering="created_at")
    def when(self, obj: Log) -> str:
        return local_time(from_us(obj.created_at))

    @admin.display(description="Request")
    def what(self, obj: Log) -> str:
        if obj.kind == Log.Kind.TOOL or obj.tool_name:
            return f"Tool {obj.tool_name}"
        return " · ".join(x for x in (obj.model, obj.prompt_name) if x) or obj.get_kind_display()

    @admin.display(description="Outcome", ordering="error_type")
    def shown_outcome(self, obj: Log) -> str:
        # A person's Stop is no failure: shown plainly, not as a red ✗.
        if log_stopped(obj):
            return format_html(
                '<span class="studio-stopped" title="{}">■ {}</span>',
                STOPPED_LOG_TYPE,
                REASONS.get(STOPPED_LOG_TYPE, "Stopped"),
            )
        # A failure says so in words (its type in the tooltip); otherwise why it finished.
        if obj.error or obj.error_type:
            code = obj.error_type or "error"
            words = REASONS.get(code) or failed_words(_masker(obj)(obj.error))
            status = f" ({obj.status_code})" if obj.status_code else ""
            return format_html(
                '<span class="studio-failed" title="{}">✗ {}{}</span>', code, words, status
            )
        return reason(obj.finish_reason) if obj.finish_reason else "Done"

    @admin.display(description="Cost", ordering="cost_total")
    def shown_cost(self, obj: Log) -> str:
        return money(obj.cost_total) if obj.cost_known else UNKNOWN_COST

    @admin.display(description="Latency", ordering="latency_ms")
    def shown_latency(self, obj: Log) -> str:
        return duration(obj.latency_ms)

    @admin.display(description="Time to first token")
    def shown_first_token(self, obj: Log) -> str:
        return duration(obj.time_to_first_token_ms)

    # The detail's costs: a request costs fractions of a cent, so significant digits.
    @admin.display(description="Input")
    def shown_cost_input(self, obj: Log) -> str:
        return money_fine(obj.cost_input) if obj.cost_known else UNKNOWN_COST

    @admin.display(description="Cached input")
    def shown_cost_cached(self, obj: Log) -> str:
        return money_fine(obj.cost_cached) if obj.cost_known else UNKNOWN_COST

    @admin.display(description="Output")
    def shown_cost_output(self, obj: Log) -> str:
        return money_fine(obj.cost_output) if obj.cost_known else UNKNOWN_COST

    @admin.display(description="Total")
    def shown_cost_total(self, obj: Log) -> str:
        return money_fine(obj.cost_total) if obj.cost_known else UNKNOWN_COST

    @admin.display(description="Complete")
    def shown_complete(self, obj: Log) -> str:
        # A failed request is never "complete ✓", whatever the flag says.
        if log_stopped(obj):
            if obj.error_type == STOPPED_LOG_TYPE:
                return "Stopped by a person (what streamed was kept)"
            return "Stopped by a person before any text"
        if obj.error or obj.error_type:
            return "No: it failed"
        return "Yes" if obj.is_complete else "No: cut short"

    @admin.display(description="Finish reason")
    def shown_finish_reason(self, obj: Log) -> str:
        return reason(obj.finish_reason)

    @admin.display(description="Error")
    def shown_error(self, obj: Log) -> str:
        return _pre(obj, obj.error)

    @admin.display(description="System prompt")
    def shown_system_prompt(self, obj: Log) -> str:
        return _pre(obj, obj.system_prompt)

    @admin.display(description="Request")
    def shown_request(self, obj: Log) -> str:
        return _pre(obj, _json(obj.request_body))

    @admin.display(description="Response")
    def shown_response(self, obj: Log) -> str:
        return _pre(obj, _json(obj.response_body))

    @admin.display(description="Provider tools")
    def shown_provider_tools(self, obj: Log) -> str:
        return provider_tools_html(obj.response_body)

    @admin.display(description="Sources")
    def shown_sources(self, obj: Log) -> str:
        return sources_html(obj.response_body)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2) if value is not None else ""
