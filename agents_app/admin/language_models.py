"""Models (LLM definitions): provider, prices, capabilities, fallbacks and the test script."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.db.models import Field, QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import path

from agents_app.admin.display import OrderColumn
from agents_app.admin.model_picker import ModelPickerWidget, discover_view, test_connection_view
from agents_app.admin.versions import VersionedAdmin
from agents_app.base.people_format import per_million
from agents_app.forms import LanguageModelForm, ModelFallbackForm, ModelFallbackFormSet
from agents_app.models import LanguageModel, ModelFallback


class ModelFallbackInline(OrderColumn, admin.TabularInline):
    model = ModelFallback
    fk_name = "model"
    form = ModelFallbackForm
    formset = ModelFallbackFormSet
    fields = ("order", "fallback")
    extra = 1
    verbose_name = "fallback"
    verbose_name_plural = "Fallbacks: tried in this order when a request to this model fails"


@admin.register(LanguageModel)
class LanguageModelAdmin(VersionedAdmin, admin.ModelAdmin):
    version_kind = "models"
    form = LanguageModelForm
    inlines = [ModelFallbackInline]
    list_display = (
        "name",
        "provider",
        "model",
        "fallbacks",
        "shown_prices",
        "updated_at",
    )
    list_filter = ("provider",)
    search_fields = ("name", "model")

    class Media:
        js = (
            "studio/model_editor.js",  # opens the script section for Test models
            "studio/model_picker.js",  # the provider's model list and "Test connection"
            "studio/dom.js",  # what the builder builds its fields with
            "studio/json_builders.js",  # the script builder over the script's JSON
        )
        css = {"all": ("studio/json_builders.css",)}

    fieldsets = [
        (
            "General",
            {"fields": ("name", "provider", "model", "base_url", "send_instance_key_to_base_url")},
        ),
        (
            "Prices",
            {
                "description": "In US dollars per million tokens; used to show what threads cost.",
                "fields": ("input_price", "output_price", "cached_price"),
            },
        ),
        (
            "Capabilities",
            {
                "description": "What the model can do. Untick what it cannot, so the studio "
                "does not send it images, tools or schemas it would reject.",
                "fields": (
                    "capabilities_vision",
                    "capabilities_function_calling",
                    "capabilities_structured_outputs",
                ),
            },
        ),
        ("OpenAI", {"fields": ("api",)}),
        ("OpenRouter", {"classes": ("collapse",), "fields": ("included_providers",)}),
        (
            "Test provider: scripted replies",
            {
                "classes": ("collapse",),
                "description": "Only for models whose provider is Test: they answer from this "
                "script instead of calling an API, which makes agents testable without keys.",
                "fields": ("script", "streaming_chunk_size", "streaming_chunk_delay_ms"),
            },
        ),
    ]

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        fieldsets = super().get_fieldsets(request, obj)
        if obj is None or obj.provider != LanguageModel.Provider.TEST:
            return fieldsets
        # A test model's script is what people come to edit: show it open.
        return [
            (name, {**opts, "classes": ()})
            if name and name.startswith("Test provider")
            else (name, opts)
            for name, opts in fieldsets
        ]

    @admin.display(description="Price per million tokens (in / out)", ordering="input_price")
    def shown_prices(self, obj: LanguageModel) -> str:
        if obj.input_price is None and obj.output_price is None:
            return "–"
        prices = (obj.input_price, obj.output_price)
        return " / ".join(per_million(p).removesuffix(" per million tokens") for p in prices)

    def save_row_only(self, request: HttpRequest, form: Any, row: Any) -> None:
        # Only a superuser's form shows the box (``get_readonly_fields``); their consent
        # covers the base URL they saw, which the definition save has just written.
        if "send_instance_key_to_base_url" in form.cleaned_data:
            row.send_instance_key_to_base_url = form.cleaned_data["send_instance_key_to_base_url"]
            row.egress_approved = bool(request.user.is_superuser)
            row.save(update_fields=["send_instance_key_to_base_url"])

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        # Where the instance's key may go is a superuser's decision (egress key rule).
        fields = tuple(super().get_readonly_fields(request, obj))
        if not request.user.is_superuser:
            fields += ("send_instance_key_to_base_url",)
        return fields

    # --- the model picker and "Test connection" (agents_app/admin/model_picker.py) ----------

    def formfield_for_dbfield(
        self, db_field: Field[Any, Any], request: HttpRequest, **kwargs: Any
    ) -> Any:
        if db_field.name == "model":
            kwargs["widget"] = ModelPickerWidget()
        return super().formfield_for_dbfield(db_field, request, **kwargs)

    def get_urls(self) -> list[Any]:
        return [
            path(
                "discover/",
                self.admin_site.admin_view(self.discover),
                name="agents_app_languagemodel_discover",
            ),
            path(
                "test-connection/",
                self.admin_site.admin_view(self.test_connection),
                name="agents_app_languagemodel_test_connection",
            ),
            *super().get_urls(),
        ]

    def _may_edit(self, request: HttpRequest) -> None:
        # Both spend the instance's key: only people who may add or change models.
        if not (self.has_add_permission(request) or self.has_change_permission(request)):
            raise PermissionDenied

    def discover(self, request: HttpRequest) -> HttpResponse:
        self._may_edit(request)
        return discover_view(request)

    def test_connection(self, request: HttpRequest) -> HttpResponse:
        self._may_edit(request)
        return test_connection_view(request)

    def get_queryset(self, request: HttpRequest) -> QuerySet[LanguageModel]:
        return super().get_queryset(request).prefetch_related("fallback_links__fallback")

    @admin.display(description="Fallbacks")
    def fallbacks(self, obj: LanguageModel) -> str:
        # Uses the prefetch above (fallback_names() would query once per row).
        links = sorted(obj.fallback_links.all(), key=lambda link: link.position)
        return " → ".join(link.fallback.name for link in links) or "–"

    # Pages of people who may only view show these form-only fields through the admin.
    @admin.display(description="Vision", boolean=True)
    def capabilities_vision(self, obj: LanguageModel) -> bool:
        return obj.capabilities.get("vision") is not False

    @admin.display(description="Function calling", boolean=True)
    def capabilities_function_calling(self, obj: LanguageModel) -> bool:
        return obj.capabilities.get("functionCalling") is not False

    @admin.display(description="Structured outputs", boolean=True)
    def capabilities_structured_outputs(self, obj: LanguageModel) -> bool:
        return obj.capabilities.get("structuredOutputs") is not False

    @admin.display(description="Chunk size")
    def streaming_chunk_size(self, obj: LanguageModel) -> Any:
        return (obj.streaming or {}).get("chunkSize")

    @admin.display(description="Chunk delay (ms)")
    def streaming_chunk_delay_ms(self, obj: LanguageModel) -> Any:
        return (obj.streaming or {}).get("chunkDelayMs")
