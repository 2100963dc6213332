"""Prompts: fields in fieldsets, ordered parts and tool entries inline, prompt env values."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.db.models import Count, QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import path

from agents_app.admin.display import OrderColumn, excerpt
from agents_app.admin.drafts import PromptDraftAdmin
from agents_app.admin.env import EnvOwnerAdminMixin, PromptEnvValueInline
from agents_app.admin.prompt_preview import preview_view
from agents_app.admin.versions import VersionedAdmin
from agents_app.forms import (
    PromptForm,
    PromptPartForm,
    PromptPartFormSet,
    PromptToolForm,
    PromptToolFormSet,
)
from agents_app.forms.fields import rendered_as_one_page
from agents_app.forms.suggestions import callables
from agents_app.models import Prompt, PromptPart, PromptTool
from agents_app.services.definitions.provider_tools import options_by_model


class PromptPartInline(OrderColumn, admin.TabularInline):
    model = PromptPart
    fk_name = "prompt"
    form = PromptPartForm
    formset = PromptPartFormSet
    fields = ("order", "type", "content", "include", "env_key")
    classes = ("tab-instructions",)
    extra = 1
    verbose_name = "part"
    verbose_name_plural = (
        "Parts: the instructions built from text, other prompts and env values, in order"
    )


class PromptToolInline(OrderColumn, admin.StackedInline):
    model = PromptTool
    fk_name = "prompt"
    form = PromptToolForm
    formset = PromptToolFormSet
    classes = ("tab-tools",)
    extra = 1
    verbose_name = "tool"
    verbose_name_plural = "Tools the model may call"
    fieldsets = [
        (None, {"fields": ("order", "name")}),
        (
            "When the tool is a provider tool (provider:NAME) or a knowledge base (knowledge:NAME)",
            {"fields": ("options",)},
        ),
        (
            "When the tool is a prompt or an agent",
            {
                "classes": ("collapse",),
                "fields": (
                    ("include_text_response", "include_tool_calls", "include_errors"),
                    "init_user_message_property",
                    "init_attachments_property",
                ),
            },
        ),
        (
            "When the tool is an agent (subagent)",
            {
                "classes": ("collapse",),
                "fields": (
                    "init_agent_name_property",
                    "blocking",
                    "resumable",
                    "receives_messages",
                    "max_instances",
                ),
            },
        ),
        (
            "When it is offered",
            {"classes": ("collapse",), "fields": ("optional", "immediate", "env")},
        ),
        (
            "When a call waits (approval, client-run tools)",
            {
                "classes": ("collapse",),
                "fields": ("requires_approval", "client", "wait_timeout_seconds"),
            },
        ),
    ]


class PromptEnvValues(PromptEnvValueInline):
    classes = ("tab-advanced",)


@admin.register(Prompt)
class PromptAdmin(PromptDraftAdmin, VersionedAdmin, EnvOwnerAdminMixin, admin.ModelAdmin):
    version_kind = "prompts"
    form = PromptForm
    inlines = [PromptPartInline, PromptToolInline, PromptEnvValues]
    # Adds the live preview of the system prompt (static/studio/prompt_preview.js).
    change_form_template = "admin/agents_app/prompt/editor.html"
    list_display = ("name", "model", "description", "tool_count", "updated_at")
    list_filter = ("model", "tool_choice", "include_chat")
    search_fields = ("name", "tool_description", "text")
    list_select_related = ("model",)
    fieldsets = [
        ("General", {"classes": ("tab-instructions",), "fields": ("name",)}),
        (
            "Instructions",
            {
                "classes": ("tab-instructions",),
                "description": "What the model is told to do. For the simple case write it "
                "here; to assemble it from other prompts and env values, build it from parts.",
                "fields": ("text",),
            },
        ),
        ("Model", {"classes": ("tab-model",), "fields": ("model",)}),
        (
            "Conversation",
            {
                "classes": ("tab-advanced",),
                "fields": (
                    "include_chat",
                    "include_past_tools",
                    "recent_image_threshold",
                    "step_budget_warning",
                ),
            },
        ),
        (
            "Tool use",
            {
                "classes": ("tab-tools",),
                "description": "The tools themselves are listed in the Tools section below.",
                "fields": ("tool_choice", "parallel_tool_calls"),
            },
        ),
        (
            "Reasoning",
            {
                "classes": ("tab-model",),
                "fields": (
                    "reasoning_effort",
                    "reasoning_max_tokens",
                    "reasoning_exclude",
                    "reasoning_include",
                ),
            },
        ),
        (
            "When another prompt calls this one as a tool",
            {"classes": ("tab-advanced",), "fields": ("tool_description", "required_schema")},
        ),
        (
            "Structured output",
            {"classes": ("tab-model",), "fields": ("response_schema",)},
        ),
        ("Hooks", {"classes": ("tab-advanced",), "fields": ("hooks",)}),
    ]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Prompt]:
        return super().get_queryset(request).annotate(tools_total=Count("tool_entries"))

    def get_urls(self) -> list[Any]:
        return [
            path(
                "preview/",
                self.admin_site.admin_view(self.preview),
                name="agents_app_prompt_preview",
            ),
            *super().get_urls(),
        ]

    def changeform_view(
        self,
        request: HttpRequest,
        object_id: str | None = None,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        # One page: the catalog below and every tool row's suggestions are one reading.
        return rendered_as_one_page(
            lambda: self._with_catalog(request, object_id, form_url, extra_context)
        )

    def _with_catalog(
        self,
        request: HttpRequest,
        object_id: str | None,
        form_url: str,
        extra_context: dict[str, Any] | None,
    ) -> HttpResponse:
        # The tool picker's companion: every name a tool row accepts, with what it does.
        catalog = callables()
        mcp_tools = [c for c in catalog if c.kind.startswith("MCP tool")]
        context = {
            **(extra_context or {}),
            "tool_catalog": catalog,
            "mcp_tools": mcp_tools,
            # Each provider tool's options as form fields (static/studio/provider_options.js).
            "provider_tool_options": options_by_model(),
        }
        return super().changeform_view(request, object_id, form_url, context)

    def preview(self, request: HttpRequest) -> HttpResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        return preview_view(request)

    @admin.display(description="Description")
    def description(self, obj: Prompt) -> str:
        return excerpt(obj.tool_description or obj.text, 70)

    @admin.display(description="Tools", ordering="tools_total")
    def tool_count(self, obj: Prompt) -> int:
        return getattr(obj, "tools_total", 0)

    # Pages of people who may only view show these form-only fields through the admin.
    @admin.display(description="Reasoning effort")
    def reasoning_effort(self, obj: Prompt) -> Any:
        return (obj.reasoning or {}).get("effort")

    @admin.display(description="Max reasoning tokens")
    def reasoning_max_tokens(self, obj: Prompt) -> Any:
        return (obj.reasoning or {}).get("maxTokens")

    @admin.display(description="Exclude reasoning from the response", boolean=True)
    def reasoning_exclude(self, obj: Prompt) -> bool:
        return bool((obj.reasoning or {}).get("exclude"))

    @admin.display(description="Send earlier reasoning back", boolean=True)
    def reasoning_include(self, obj: Prompt) -> bool:
        return bool((obj.reasoning or {}).get("include"))
