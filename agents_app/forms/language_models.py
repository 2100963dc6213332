"""The model (LLM definition) form: capabilities as checkboxes, fallbacks as ordered rows."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from pydantic import ValidationError as PydanticValidationError

from agents_app.base.code_registry import get_registry
from agents_app.forms.definition_check import (
    DefinitionForm,
    DefinitionRowsFormSet,
    ErrorRoutes,
    OrderedRowForm,
    RowsTarget,
    release_unique_values,
    without_none,
)
from agents_app.forms.fields import CommaSeparatedField, PrettyJSONField, PriceInput
from agents_app.models import LanguageModel, ModelFallback
from runtime.core.spec import ModelCapabilities, ModelDefinition, ScriptedResponse
from runtime.definitions.validation import (
    Catalog,
    DefinitionError,
    base_url_errors,
    new_model_api,
    parse,
)
from runtime.providers.registry import known_providers, provider_label

# The admin renders help texts as HTML: the example and the field names are code.
SCRIPT_HELP = (
    "Test provider only. A JSON list of scripted replies: a thread's first request to this "
    'model gets the first item, and so on. Example: <code>[{"content": "Hello!"}, '
    '{"toolCalls": [{"name": "lookup_order", "arguments": {"order_id": "A-1"}}]}]</code>. '
    "Item fields: <code>content</code>, <code>toolCalls</code>, <code>reasoningContent</code>, "
    "<code>finishReason</code>, <code>usage</code>, <code>error</code>, <code>delayMs</code>, "
    "<code>expectInput</code>."
)


API_HELP = (
    "OpenAI only: which OpenAI API serves this model. Responses carries the model's "
    "reasoning between tool steps and runs OpenAI's own tools (web search, code "
    "interpreter, file search, image generation); Chat Completions is the older API (and "
    "the one search-preview models use). Empty: Responses for a new OpenAI model; a model "
    "saved before this choice existed keeps Chat Completions."
)


def provider_choices(current: str = "") -> list[tuple[str, str]]:
    """Every provider a model may name (native, OpenAI-compatible, ``define_provider``
    definitions, test); a stored unknown name stays listed so the page shows it (saving it
    is refused by the save rules with a sentence)."""
    get_registry()  # discovers agents/providers/ with the rest of the code
    names = list(known_providers())
    if current and current not in names:
        names.append(current)
    return [(name, provider_label(name)) for name in names]


def _float(value: Decimal | None) -> float | None:
    return float(value) if value is not None else None


def _script_item_errors(number: int, item: Any) -> list[str]:
    if not isinstance(item, dict):
        return [
            f'Script item {number}: each reply must be a JSON object, like {{"content": "Hi"}}.'
        ]
    _, errors = parse(ScriptedResponse, item)
    out = []
    for e in errors:
        where = f" ({e.path})" if "." in e.path else ""
        out.append(f"Script item {number}{where}: {e.message}")
    return out


class BaseUrlField(forms.URLField):
    """Django's URL field, after the definitions' own rule (``base_url_errors``), so a base
    URL holding shell syntax gets the sentence saying what is wrong with it rather than
    "Enter a valid URL" (issue #36 item 4)."""

    def clean(self, value: Any) -> Any:
        text = value.strip() if isinstance(value, str) else ""
        if text.startswith(("http://", "https://")):
            errors = base_url_errors(text)
            if errors:
                raise ValidationError(errors[0].message)
        return super().clean(value)


# Capability box → the ``ModelCapabilities`` property it shows, and its 0.1.0 / 0.2.0 names.
_CAPABILITY_BOXES = {
    "vision": "images",
    "function_calling": "tool_calls",
    "structured_outputs": "json_mode",
}
_CAPABILITY_NAMES = {
    "vision": ("vision", "supportsImages"),
    "function_calling": ("functionCalling", "supportsToolCalls"),
    "structured_outputs": ("structuredOutputs", "supportsJsonMode"),
}
_CAPABILITY_0_1_NAMES = frozenset(old for old, _ in _CAPABILITY_NAMES.values())


class LanguageModelForm(DefinitionForm):
    definition_model = ModelDefinition

    included_providers = CommaSeparatedField(
        label="Included providers",
        help_text="OpenRouter only: upstream providers to route through, in order, separated "
        "by commas (for example: anthropic, google-vertex).",
    )
    capabilities_vision = forms.BooleanField(
        required=False, label="Vision", help_text="The model accepts images."
    )
    capabilities_function_calling = forms.BooleanField(
        required=False, label="Function calling", help_text="The model can call tools."
    )
    capabilities_structured_outputs = forms.BooleanField(
        required=False,
        label="Structured outputs",
        help_text="The model can answer in a given JSON schema.",
    )
    base_url = BaseUrlField(
        required=False,
        max_length=200,
        assume_scheme="https",
        label="Base URL",
        help_text="Override the provider's API address (proxies, compatible servers). "
        "Empty: the provider's usual address.",
    )
    script = PrettyJSONField(label="Script", help_text=SCRIPT_HELP)
    streaming_chunk_size = forms.IntegerField(
        required=False,
        label="Chunk size",
        help_text="Test provider only: characters per streamed chunk (empty: 8).",
    )
    streaming_chunk_delay_ms = forms.IntegerField(
        required=False,
        label="Chunk delay (ms)",
        help_text="Test provider only: pause between streamed chunks (empty: no pause).",
    )

    class Meta:
        model = LanguageModel
        fields = [
            "name",
            "provider",
            "model",
            "base_url",
            "input_price",
            "output_price",
            "cached_price",
            "included_providers",
            "api",
            "script",
        ]
        labels = {"model": "Provider model id", "api": "OpenAI API"}
        widgets = {name: PriceInput() for name in ("input_price", "output_price", "cached_price")}
        help_texts = {
            "name": "How prompts refer to this model. Letters, digits, '_', '-' and '.'.",
            "model": "The id the provider uses, for example gpt-4o-mini or "
            "anthropic/claude-3.5-sonnet.",
            "provider": "Who serves the model. 'Test' answers from the script below and "
            "needs no API key.",
            "api": API_HELP,
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        try:
            caps = self.instance.capabilities_obj()
        except PydanticValidationError:  # a hand-edited row: show the defaults, saving fixes it
            caps = ModelCapabilities()
        # The reference treats a missing capability flag as "supported": only an explicit
        # false leaves the box unticked.
        for name, said in _CAPABILITY_BOXES.items():
            self.fields[f"capabilities_{name}"].initial = getattr(caps, said) is not False
        if "provider" in self.fields and not self.fields["provider"].disabled:
            field = self.fields["provider"]
            self.fields["provider"] = forms.ChoiceField(
                choices=provider_choices(self.instance.provider if self.instance.pk else ""),
                label=field.label,
                help_text=field.help_text,
            )
        # A Test model never reads a provider model id: "scripted" when left empty.
        if "model" in self.fields:  # absent on a view-only page
            self.fields["model"].required = False
        if "api" in self.fields:  # say what "no choice" means for this model
            default = "Responses" if self.instance.pk is None else "Chat Completions"
            choices = [c for c in LanguageModel._meta.get_field("api").choices or [] if c[0]]
            field = self.fields["api"]
            assert isinstance(field, forms.ChoiceField)  # a CharField with choices
            field.choices = [("", f"Default ({default})"), *choices]
        streaming = self.instance.streaming or {}
        self.fields["streaming_chunk_size"].initial = streaming.get("chunkSize")
        self.fields["streaming_chunk_delay_ms"].initial = streaming.get("chunkDelayMs")

    # Checked per field (not only in the definition) so a price error shows even when
    # another field, such as the script, also has one.
    def _price(self, field: str) -> Decimal | None:
        price: Decimal | None = self.cleaned_data.get(field)
        if price is not None and price < 0:
            raise ValidationError(
                "A price cannot be negative. Enter 0 or more (US dollars per million tokens)."
            )
        return price

    def clean_input_price(self) -> Decimal | None:
        return self._price("input_price")

    def clean_output_price(self) -> Decimal | None:
        return self._price("output_price")

    def clean_cached_price(self) -> Decimal | None:
        return self._price("cached_price")

    def clean_script(self) -> list[dict[str, Any]] | None:
        script = self.cleaned_data.get("script")
        if script is None:
            return None
        if not isinstance(script, list):
            raise ValidationError(
                'The script must be a JSON list of replies, like [{"content": "Hi"}].'
            )
        errors = [m for n, item in enumerate(script, start=1) for m in _script_item_errors(n, item)]
        if errors:
            raise ValidationError(errors)
        return [ScriptedResponse.model_validate(item).dump() for item in script]

    def definition_data(self, rows: Mapping[str, DefinitionRowsFormSet]) -> dict[str, Any]:
        cd = self.cleaned_data
        if "fallbacks" in rows:
            fallbacks = [f.cleaned_data["fallback"].name for f in rows["fallbacks"].rows()]
        else:
            fallbacks = self.instance.fallback_names() if self.instance.pk else []
        streaming = without_none(
            {
                "chunkSize": cd.get("streaming_chunk_size"),
                "chunkDelayMs": cd.get("streaming_chunk_delay_ms"),
            }
        )
        return without_none(
            {
                "name": cd.get("name"),
                "provider": cd.get("provider"),
                "model": cd.get("model"),
                "includedProviders": cd.get("included_providers") or None,
                "fallbacks": fallbacks or None,
                "inputPrice": _float(cd.get("input_price")),
                "outputPrice": _float(cd.get("output_price")),
                "cachedPrice": _float(cd.get("cached_price")),
                "capabilities": self._capabilities(),
                "baseUrl": cd.get("base_url") or None,
                "api": self._api(),
                "script": cd.get("script"),
                "streaming": streaming or None,
            }
        )

    def _capabilities(self) -> dict[str, Any]:
        """The three boxes, under the names the stored model uses (0.1.0's or 0.2.0's); the
        capabilities the form does not show (maxContextTokens …) are kept as stored."""
        stored = dict(self.instance.capabilities or {}) if self.instance.pk else {}
        zero_two = any(key not in _CAPABILITY_0_1_NAMES for key in stored)
        for name, (old, new) in _CAPABILITY_NAMES.items():
            key = new if zero_two else old
            stored.pop(old, None)
            stored.pop(new, None)
            stored[key] = self.cleaned_data.get(f"capabilities_{name}", False)
        return stored

    def clean_model(self) -> str:
        value = (self.cleaned_data.get("model") or "").strip()
        if value:
            return value
        if self.data.get(self.add_prefix("provider")) == LanguageModel.Provider.TEST:
            return "scripted"
        raise forms.ValidationError(
            "Enter the id the provider uses for this model, for example gpt-4o-mini."
        )

    def _api(self) -> str | None:
        api = self.cleaned_data.get("api") or None
        if self.instance.pk is not None:
            return api  # an existing model keeps what it has (blank: Chat Completions)
        cd = self.cleaned_data
        return new_model_api(cd.get("provider"), api, cd.get("model") or "")

    def error_routes(self, rows: Mapping[str, DefinitionRowsFormSet]) -> ErrorRoutes:
        targets = {}
        if "fallbacks" in rows:
            targets["fallbacks"] = RowsTarget(
                rows["fallbacks"], rows["fallbacks"].rows(), default_field="fallback"
            )
        return ErrorRoutes(
            fields={"streaming": "streaming_chunk_size"},
            rows=targets,
            item_labels={"script": "Script item"},
        )

    def locate_errors(
        self, errors: list[DefinitionError], defn: Any, catalog: Catalog
    ) -> list[DefinitionError]:
        # "Only test models can have a script" is about the streaming fields when no script is set.
        return [
            DefinitionError("streaming", e.message)
            if e.path == "script" and defn.script is None
            else e
            for e in errors
        ]

    def save(self, commit: bool = True) -> Any:
        d: ModelDefinition | None = self.definition
        if d is not None:
            # Stored exactly as services.definitions.rows.model_from_definition stores them.
            self.instance.capabilities = d.capabilities.dump() if d.capabilities else {}
            self.instance.streaming = d.streaming.dump() if d.streaming else None
            self.instance.api = d.api or ""
        return super().save(commit)


class ModelFallbackForm(OrderedRowForm):
    class Meta:
        model = ModelFallback
        fields = ["order", "fallback"]
        labels = {"fallback": "Fallback model"}


class ModelFallbackFormSet(DefinitionRowsFormSet):
    """The ordered fallback chain: used in order when the model's request fails."""

    role = "fallbacks"

    def clean(self) -> None:
        seen: set[int] = set()
        for form in self.rows():
            fallback = form.cleaned_data.get("fallback")
            if fallback is not None and fallback.pk in seen:
                form.add_error("fallback", "This model is already in the fallback list.")
            elif fallback is not None:
                seen.add(fallback.pk)
        super().clean()

    def save(self, commit: bool = True) -> list[Any]:
        if commit:
            release_unique_values(self, "fallback")
        return super().save(commit)
