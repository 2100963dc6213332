"""Logs: one row per LLM request attempt or tool call (read-only)."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.contrib import admin
from django.utils.html import format_html

from agents_app.admin.display import from_us
from agents_app.admin.env import secret_masker
from agents_app.admin.log_sources import provider_tools_html, sources_html
from agents_app.admin.read_only import ReadOnlyAdmin
from agents_app.models import Log


def _masker(obj: Log) -> Callable[[str], str]:
    # One masker per page: it decrypts every stored secret once.
    mask: Callable[[str], str] = obj.__dict__.setdefault("_studio_mask", secret_masker())
    return mask


def _pre(obj: Log, text: str) -> str:
    return format_html('<pre class="studio-log">{}</pre>', _masker(obj)(text)) if text else "–"


@admin.register(Log)
class LogAdmin(ReadOnlyAdmin):
    list_display = (
        "when",
        "thread",
        "kind",
        "model",
        "prompt_name",
        "tool_name",
        "total_tokens",
        "cost_total",
        "latency_ms",
        "status_code",
        "failed",
    )
    list_filter = ("kind", "provider", "is_complete", "error_type", "finish_reason")
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
                    ("status_code", "finish_reason", "is_complete"),
                    ("error_type", "shown_error"),
                    ("latency_ms", "time_to_first_token_ms"),
                )
            },
        ),
        (
            "Tokens and cost (USD)",
            {
                "fields": (
                    ("input_tokens", "cached_tokens", "output_tokens", "reasoning_tokens"),
                    "total_tokens",
                    ("cost_input", "cost_cached", "cost_output", "cost_total"),
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
        "shown_error",
        "shown_system_prompt",
        "shown_request",
        "shown_response",
        "shown_provider_tools",
        "shown_sources",
    )

    @admin.display(description="When", ordering="created_at")
    def when(self, obj: Log) -> datetime | None:
        return from_us(obj.created_at)

    @admin.display(description="Error", boolean=True)
    def failed(self, obj: Log) -> bool:
        return bool(obj.error)

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
