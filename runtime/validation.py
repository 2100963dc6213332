"""Definition validation in one place (spec §9 plus cross-references).

Used by the admin studio, the HTTP API, file import and the engine alike. Every
rule returns ``DefinitionError``s with a spec-style field path (``sideA.prompt``)
and a sentence a non-developer understands; nothing here raises on bad input.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from runtime.definitions import (
    MAX_SESSION_TURNS_CAP,
    PROVIDERS,
    AgentDefinition,
    ModelDefinition,
    PromptDefinition,
    PromptIncludePart,
    SideConfig,
)

# Names end up in file paths (export), URLs and tool names: letters, digits, '_', '-', '.',
# never a leading dot, so "..", "/x" and "a/b" are impossible.
NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,127}$")
HOOK_NAMES = (
    "filter_messages",
    "prefilter_llm_history",
    "before_create_message",
    "after_create_message",
    "before_update_message",
    "after_update_message",
    "before_store_tool_result",
    "after_tool_call_success",
    "after_tool_call_failure",
    "after_thread_created",
    "after_subagent_created",
    "after_system_message",
)


@dataclass(frozen=True)
class DefinitionError:
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


@dataclass
class Catalog:
    """The names a definition may refer to, and the edges needed for cycle checks."""

    models: set[str] = field(default_factory=set)
    prompts: set[str] = field(default_factory=set)
    agents: set[str] = field(default_factory=set)
    tools: set[str] = field(default_factory=set)
    hooks: set[str] = field(default_factory=set)
    prompt_includes: dict[str, list[str]] = field(default_factory=dict)
    model_fallbacks: dict[str, list[str]] = field(default_factory=dict)
    # When False, unknown tool/hook names are accepted (code may not be loaded, e.g. import on CI).
    strict_code_names: bool = True

    def callables(self) -> set[str]:
        return self.tools | self.prompts | self.agents


# --- parsing ----------------------------------------------------------------

_LABELS = {
    "name": "Name",
    "sideA": "Side A",
    "sideB": "Side B",
    "prompt": "Prompt",
    "model": "Model",
    "provider": "Provider",
    "type": "Type",
}


def _label(loc: tuple[Any, ...]) -> str:
    last = str(loc[-1]) if loc else ""
    return _LABELS.get(last, last or "Value")


def _friendly(err: Mapping[str, Any]) -> str:
    kind = err["type"]
    label = _label(tuple(err["loc"]))
    if kind == "missing":
        return f"{label} is required."
    if kind == "extra_forbidden":
        return (
            f"Unknown property '{err['loc'][-1]}'. Check the spelling (properties are camelCase)."
        )
    if kind == "literal_error":
        expected = err.get("ctx", {}).get("expected", "")
        return f"{label} must be one of: {expected}."
    if kind in ("int_type", "int_parsing", "int_from_float"):
        return f"{label} must be a whole number."
    if kind in ("float_type", "float_parsing"):
        return f"{label} must be a number."
    if kind in ("bool_type", "bool_parsing"):
        return f"{label} must be true or false."
    if kind in ("string_type",):
        return f"{label} must be text."
    if kind in ("list_type",):
        return f"{label} must be a list."
    if kind in ("dict_type", "model_type", "model_attributes_type"):
        return f"{label} must be an object."
    if kind.startswith("greater_than"):
        return f"{label} must be at least {err.get('ctx', {}).get('ge', err.get('ctx', {}).get('gt'))}."
    return str(err.get("msg", "Invalid value."))


def _path(loc: Iterable[Any]) -> str:
    # Union members show up in pydantic locations ("str", "list[...]"): drop them.
    parts = [str(p) for p in loc if not (isinstance(p, str) and ("[" in p or p in ("str", "bool")))]
    return ".".join(parts)


M = TypeVar("M", bound=BaseModel)


def parse(model: type[M], data: Any) -> tuple[M | None, list[DefinitionError]]:
    if not isinstance(data, dict):
        return None, [DefinitionError("", "A definition must be a JSON object.")]
    try:
        return model.model_validate(data), []
    except ValidationError as exc:
        seen: dict[str, DefinitionError] = {}
        for err in exc.errors():
            e = DefinitionError(_path(err["loc"]), _friendly(err))
            seen.setdefault(e.path, e)
        return None, list(seen.values())


# --- rules ------------------------------------------------------------------


def check_name(name: Any, path: str = "name") -> list[DefinitionError]:
    if not isinstance(name, str) or not name.strip():
        return [DefinitionError(path, "Name is required.")]
    if not NAME_RE.match(name) or ".." in name:
        return [
            DefinitionError(
                path,
                "Name may use only letters, digits, '_', '-' and '.', must not start with '.' "
                "or contain '..', and is at most 128 characters (it is used in file paths).",
            )
        ]
    return []


def check_icon(icon: str | None) -> list[DefinitionError]:
    if not icon:
        return []
    lowered = icon.strip().lower()
    ok = (icon.startswith("/") and not icon.startswith("//")) or lowered.startswith(
        ("http://", "https://")
    )
    if not ok or any(c in icon for c in "\"'<>\\ \n\r\t"):
        return [
            DefinitionError(
                "icon",
                "Icon must be an absolute path starting with '/' or an http(s) URL "
                "(javascript: and data: URLs are not allowed).",
            )
        ]
    return []


def _positive(value: int | None, path: str, what: str) -> list[DefinitionError]:
    if value is not None and value < 1:
        return [DefinitionError(path, f"{what} must be a positive whole number.")]
    return []


def _side_rules(
    side: SideConfig, key: str, label: str, catalog: Catalog | None
) -> list[DefinitionError]:
    errs: list[DefinitionError] = []
    if not side.prompt.strip():
        errs.append(DefinitionError(f"{key}.prompt", f"{label} needs a prompt."))
    elif catalog is not None and side.prompt not in catalog.prompts:
        errs.append(DefinitionError(f"{key}.prompt", f"Prompt '{side.prompt}' does not exist."))
    if side.stop_tool and not side.stop_tool_response_property:
        errs.append(
            DefinitionError(
                f"{key}.stopToolResponseProperty",
                "When a stop tool is set, name the property of its result that holds the outcome.",
            )
        )
    errs += _positive(side.max_steps, f"{key}.maxSteps", "Max steps")
    if catalog is not None and catalog.strict_code_names:
        for attr, prop in (("stop_tool", "stopTool"), ("end_session_tool", "endSessionTool")):
            name = getattr(side, attr)
            if name and name not in catalog.callables():
                errs.append(
                    DefinitionError(
                        f"{key}.{prop}", f"'{name}' is not a known tool, prompt or agent."
                    )
                )
    return errs


def validate_agent(agent: AgentDefinition, catalog: Catalog | None = None) -> list[DefinitionError]:
    """Spec §9 for agents; with a catalog, also that referenced prompts and tools exist."""
    errs = check_name(agent.name)
    errs += _side_rules(agent.side_a, "sideA", "Side A", catalog)
    if agent.type == "dual_ai":
        if agent.side_b is None:
            errs.append(DefinitionError("sideB", "A dual_ai agent needs a side B with a prompt."))
        else:
            errs += _side_rules(agent.side_b, "sideB", "Side B", catalog)
    if agent.expose_as_tool and not (agent.tool_description or "").strip():
        errs.append(
            DefinitionError(
                "toolDescription",
                "An agent exposed as a tool needs a tool description: the model reads it "
                "to decide when to call the agent.",
            )
        )
    errs += _positive(agent.max_session_turns, "maxSessionTurns", "Max session turns")
    if agent.max_session_turns is not None and agent.max_session_turns > MAX_SESSION_TURNS_CAP:
        errs.append(
            DefinitionError(
                "maxSessionTurns", f"Max session turns may be at most {MAX_SESSION_TURNS_CAP}."
            )
        )
    errs += check_icon(agent.icon)
    errs += _hook_rules(agent.hooks, catalog)
    return errs


def _hook_rules(hooks: list[str] | None, catalog: Catalog | None) -> list[DefinitionError]:
    if not hooks or catalog is None or not catalog.strict_code_names:
        return []
    return [
        DefinitionError(f"hooks.{i}", f"Hook '{h}' is not registered.")
        for i, h in enumerate(hooks)
        if h not in catalog.hooks
    ]


def validate_prompt(
    prompt: PromptDefinition, catalog: Catalog | None = None
) -> list[DefinitionError]:
    errs = check_name(prompt.name)
    if isinstance(prompt.prompt, list):
        for i, part in enumerate(prompt.prompt):
            if (
                isinstance(part, PromptIncludePart)
                and catalog is not None
                and part.prompt not in catalog.prompts
                and part.prompt != prompt.name
            ):
                errs.append(
                    DefinitionError(
                        f"prompt.{i}.prompt", f"Included prompt '{part.prompt}' does not exist."
                    )
                )
    if catalog is not None:
        if prompt.model not in catalog.models:
            errs.append(DefinitionError("model", f"Model '{prompt.model}' does not exist."))
        cycle = find_cycle(
            prompt.name, {**catalog.prompt_includes, prompt.name: prompt.include_names()}
        )
        if cycle:
            errs.append(
                DefinitionError(
                    "prompt", "Prompt includes form a cycle: " + " → ".join(cycle) + "."
                )
            )
        if catalog.strict_code_names:
            known = catalog.callables()
            for i, name in enumerate(prompt.tool_names()):
                if name not in known and not name.startswith(("provider:", "mcp:")):
                    errs.append(
                        DefinitionError(
                            f"tools.{i}", f"'{name}' is not a known tool, prompt or agent."
                        )
                    )
    errs += _hook_rules(prompt.hooks, catalog)
    if (
        prompt.required_schema is not None
        and prompt.required_schema.get("type", "object") != "object"
    ):
        errs.append(
            DefinitionError("requiredSchema", "The required schema must describe an object.")
        )
    return errs


def validate_model(model: ModelDefinition, catalog: Catalog | None = None) -> list[DefinitionError]:
    errs = check_name(model.name)
    if model.provider not in PROVIDERS:
        errs.append(
            DefinitionError("provider", f"Provider must be one of: {', '.join(PROVIDERS)}.")
        )
    if not model.model.strip():
        errs.append(DefinitionError("model", "The provider's model id is required."))
    if (model.script or model.streaming) and model.provider != "test":
        errs.append(
            DefinitionError("script", "Only models of the 'test' provider can have a script.")
        )
    if model.base_url and not model.base_url.startswith(("http://", "https://")):
        errs.append(DefinitionError("baseUrl", "The base URL must start with http:// or https://."))
    for i, fb in enumerate(model.fallbacks or []):
        if fb == model.name:
            errs.append(DefinitionError(f"fallbacks.{i}", "A model cannot be its own fallback."))
        elif catalog is not None and fb not in catalog.models:
            errs.append(DefinitionError(f"fallbacks.{i}", f"Fallback model '{fb}' does not exist."))
    if catalog is not None:
        graph = {**catalog.model_fallbacks, model.name: list(model.fallbacks or [])}
        cycle = find_cycle(model.name, graph)
        if cycle and len(cycle) > 2:
            errs.append(
                DefinitionError("fallbacks", "Fallbacks form a cycle: " + " → ".join(cycle) + ".")
            )
    return errs


def find_cycle(start: str, edges: Mapping[str, list[str]]) -> list[str] | None:
    """A path start → … → start through ``edges``, or None."""
    stack: list[tuple[str, list[str]]] = [(start, [start])]
    seen: set[str] = set()
    while stack:
        node, path = stack.pop()
        for nxt in edges.get(node, []):
            if nxt == start:
                return [*path, start]
            if nxt not in seen:
                seen.add(nxt)
                stack.append((nxt, [*path, nxt]))
    return None


Validator = Callable[[Any, "Catalog | None"], list[DefinitionError]]
KINDS: dict[str, tuple[type[BaseModel], Validator]] = {
    "agents": (AgentDefinition, validate_agent),
    "prompts": (PromptDefinition, validate_prompt),
    "models": (ModelDefinition, validate_model),
}


def parse_and_validate(
    kind: str, data: Any, catalog: Catalog | None = None
) -> tuple[BaseModel | None, list[DefinitionError]]:
    """Parse raw JSON of one definition kind, then apply its rules."""
    model_cls, validator = KINDS[kind]
    if isinstance(data, dict):
        name_errs = check_name(data.get("name"))
        if name_errs and "name" in data:
            obj, errs = parse(model_cls, {**data, "name": "placeholder"})
            return None, name_errs + [e for e in errs if e.path != "name"]
    obj, errs = parse(model_cls, data)
    if obj is None:
        return None, errs
    return obj, validator(obj, catalog)
