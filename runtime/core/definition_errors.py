"""What a definition's faults look like, and the parsing every definition kind shares.

``DefinitionError`` (a spec-style field path and a sentence a non-developer
understands), the ``Catalog`` of names a definition may refer to, ``parse`` (JSON into a
definition model, pydantic's errors rewritten as ``DefinitionError``s) and the name rule
all definitions share. The rules of each kind build on this module
(``runtime.definitions.validation``, ``runtime.definitions.entry_rules``, ``runtime.mcp.servers``); it imports none of them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from runtime.core.provider_tools import ProviderToolOffer

# Names end up in file paths (export), URLs and tool names: letters, digits, '_', '-', '.',
# never a leading dot, so "..", "/x" and "a/b" are impossible.
NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,127}$")


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
    # Ids of the registered hooks of a person's scope (``runtime.core.user_scope``), which
    # no prompt, agent or ``parentHooks`` may list.
    user_hooks: set[str] = field(default_factory=set)
    # Side handlers (``define_handler``) a side may be backed by; unchecked like tools and
    # hooks when ``strict_code_names`` is False.
    handlers: set[str] = field(default_factory=set)
    prompt_includes: dict[str, list[str]] = field(default_factory=dict)
    model_fallbacks: dict[str, list[str]] = field(default_factory=dict)
    # When False, unknown tool/hook names are accepted (code may not be loaded, e.g. import on CI).
    strict_code_names: bool = True
    # MCP server name → its tool names (None: not known yet). None: ``mcp:`` names unchecked.
    mcp_tools: dict[str, set[str] | None] | None = None
    # Remote A2A agents' names (``a2a/<name>``). None: ``a2a:`` names unchecked.
    a2a_agents: set[str] | None = None
    # Knowledge bases' names (``knowledge:<name>``). None: ``knowledge:`` names unchecked.
    knowledge_bases: set[str] | None = None
    # Model name → its provider, and → its ``structuredOutputs`` capability (None: not said).
    model_providers: dict[str, str] = field(default_factory=dict)
    model_structured_outputs: dict[str, bool | None] = field(default_factory=dict)
    # Model name → the provider tools a prompt on it may use (``runtime.providers.offers``);
    # a model missing here is judged by its provider alone.
    model_offers: dict[str, dict[str, ProviderToolOffer]] = field(default_factory=dict)
    # For the option rules of ``runtime.definitions.entry_rules`` (issue #38): agent name → (type,
    # exposeAsTool; ``human_a`` for a person on side A), model name → its ``functionCalling``
    # (``supportsToolCalls``) capability, prompt name → its model.
    agent_shapes: dict[str, tuple[str, bool]] = field(default_factory=dict)
    model_function_calling: dict[str, bool | None] = field(default_factory=dict)
    prompt_models: dict[str, str] = field(default_factory=dict)
    # Prompts that list tools: a model they run on cannot later say functionCalling: false.
    prompts_with_tools: set[str] = field(default_factory=set)
    # For the agent hooks rule (``runtime.definitions.entry_rules.agent_hooks_errors``): prompt name → the
    # hooks it lists, → the names its tool entries call (sub-prompts among them); stored agent
    # with hooks (not one being saved with the prompt) → (its hooks, its sides' prompts).
    prompt_hooks: dict[str, list[str]] = field(default_factory=dict)
    prompt_tools: dict[str, list[str]] = field(default_factory=dict)
    agent_hooks: dict[str, tuple[list[str], list[str]]] = field(default_factory=dict)
    # Model name → the efforts its ``reasoningLevels`` offer (absent: it does not say);
    # prompt name → the effort its reasoning asks for ("" for reasoning without an effort).
    model_reasoning_levels: dict[str, list[str]] = field(default_factory=dict)
    prompt_reasoning: dict[str, str] = field(default_factory=dict)

    def callables(self) -> set[str]:
        return self.tools | self.prompts | self.agents


# --- parsing ----------------------------------------------------------------

_LABELS = {
    "sideA": "Side A",
    "sideB": "Side B",
    "baseUrl": "Base URL",
    "requiredSchema": "Required schema",
    "responseSchema": "Response schema",
}
# What a value must be, by the pydantic error that says it is not.
_SHAPES = {
    "string_type": "text",
    "model_type": "an object",
    "model_attributes_type": "an object",
    "dict_type": "an object",
    "list_type": "a list",
    "bool_type": "true or false",
    "int_type": "a whole number",
    "float_type": "a number",
}


def _words(key: str) -> str:
    """``maxSessionTurns`` → ``max session turns`` (labels read as words, paths stay exact)."""
    if key in _LABELS:
        return _LABELS[key]
    if not re.fullmatch(r"[a-z][A-Za-z0-9]*", key):
        # A key the author chose (an env name like API_KEY), not a spec property.
        return f"the value of '{key}'"
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r" \1", key).lower()


def _label(loc: tuple[Any, ...]) -> str:
    if not loc:
        return "Value"
    last = loc[-1]
    if isinstance(last, int):
        label = f"item {last + 1} of {_words(str(loc[-2])) if len(loc) > 1 else 'the list'}"
    else:
        label = _words(str(last))
    return label[:1].upper() + label[1:]


def _number(value: Any) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def _one_of(expected: str) -> str:
    # pydantic writes "'a', 'b' or 'c'"; a single choice reads better without "one of".
    return f"must be {expected}" if " or " not in expected else f"must be one of: {expected}"


def _friendly(err: Mapping[str, Any]) -> str:
    kind = err["type"]
    ctx = err.get("ctx") or {}
    label = _label(tuple(err["loc"]))
    if kind == "missing":
        return f"{label} is required."
    if kind == "extra_forbidden":
        return (
            f"Unknown property '{err['loc'][-1]}'. Check the spelling (properties are camelCase)."
        )
    if kind == "union_shapes":
        return f"{label} must be {' or '.join(ctx['shapes'])}."
    if kind == "literal_error":
        return f"{label} {_one_of(str(ctx.get('expected', '')))}."
    if kind in ("int_type", "int_parsing", "int_from_float"):
        return f"{label} must be a whole number."
    if kind in ("float_type", "float_parsing", "finite_number"):
        return f"{label} must be a number."
    if kind in ("bool_type", "bool_parsing"):
        return f"{label} must be true or false."
    if kind in _SHAPES:
        return f"{label} must be {_SHAPES[kind]}."
    if kind in ("greater_than_equal", "greater_than"):
        bound = _number(ctx.get("ge", ctx.get("gt")))
        return f"{label} must be {'at least' if 'ge' in ctx else 'greater than'} {bound}."
    # Anything else: keep pydantic's sentence but make it speak about the field.
    msg = str(err.get("msg", "is not valid."))
    return re.sub(r"^Input should be", f"{label} must be", msg).rstrip(".") + "."


def _path(loc: Iterable[Any]) -> str:
    return ".".join(str(p) for p in loc)


def _split_at_union_tag(
    loc: tuple[Any, ...], data: Any, kind: str
) -> tuple[tuple[Any, ...], str, tuple[Any, ...]] | None:
    """Find the first union-member tag in ``loc`` ("str", "ToolConfig", "list[...]").

    pydantic puts the member's name into the location of every error under a
    union. Walking the input tells a tag from a property name exactly: a property
    is a key of the input (or, for a ``missing`` error, the last element).
    """
    node = data
    for i, step in enumerate(loc):
        is_key = isinstance(node, dict) and isinstance(step, str) and step in node
        is_index = isinstance(node, list) and isinstance(step, int) and 0 <= step < len(node)
        if is_key or is_index:
            node = node[step]
        elif i == len(loc) - 1 and kind == "missing":
            return None
        elif isinstance(step, str):
            return loc[:i], step, loc[i + 1 :]
        else:
            return None
    return None


def _pick_member(
    prefix: tuple[Any, ...], members: dict[str, list[dict[str, Any]]]
) -> list[dict[str, Any]]:
    """Errors of the union member the input was evidently meant to be.

    A member whose error sits on the value itself (wrong shape) or on its ``type``
    discriminator is not what the author meant; of the rest, the one with fewest
    errors wins. When no member fits, one error says which shapes would.
    """

    def wrong_shape(errs: list[dict[str, Any]]) -> bool:
        return any(
            e["loc"] == prefix or (e["loc"] == (*prefix, "type") and e["type"] == "literal_error")
            for e in errs
        )

    fitting = [errs for errs in members.values() if not wrong_shape(errs)]
    if fitting:
        return min(fitting, key=len)
    type_errs = [e for errs in members.values() for e in errs if e["loc"] == (*prefix, "type")]
    if len(type_errs) == len(members):
        choices = [str(e.get("ctx", {}).get("expected", "")) for e in type_errs]
        expected = (
            ", ".join(choices[:-1]) + " or " + choices[-1] if len(choices) > 1 else choices[0]
        )
        return [{"loc": (*prefix, "type"), "type": "literal_error", "ctx": {"expected": expected}}]
    shapes: list[str] = []
    for errs in members.values():
        for e in errs:
            if e["loc"] != prefix:
                continue
            shape = _SHAPES.get(e["type"]) or str(e.get("ctx", {}).get("expected", "")).lower()
            if shape and shape not in shapes:
                shapes.append(shape)
    return [{"loc": prefix, "type": "union_shapes", "ctx": {"shapes": shapes or ["valid"]}}]


def _resolve_unions(errors: list[dict[str, Any]], data: Any) -> list[dict[str, Any]]:
    """Replace the errors of every union by those of the member that was meant, outermost first."""
    pending = errors
    while True:
        done: list[dict[str, Any]] = []
        unions: dict[tuple[Any, ...], dict[str, list[dict[str, Any]]]] = {}
        for err in pending:
            split = _split_at_union_tag(tuple(err["loc"]), data, err["type"])
            if split is None:
                done.append(err)
                continue
            prefix, tag, rest = split
            unions.setdefault(prefix, {}).setdefault(tag, []).append(
                {**err, "loc": (*prefix, *rest)}
            )
        if not unions:
            return done
        pending = done
        for prefix, members in unions.items():
            pending = pending + _pick_member(prefix, members)


M = TypeVar("M", bound=BaseModel)


def parse(model: type[M], data: Any) -> tuple[M | None, list[DefinitionError]]:
    if not isinstance(data, dict):
        return None, [DefinitionError("", "A definition must be a JSON object.")]
    try:
        return model.model_validate(data), []
    except ValidationError as exc:
        seen: dict[str, DefinitionError] = {}
        for err in _resolve_unions([dict(e) for e in exc.errors()], data):
            e = DefinitionError(_path(err["loc"]), _friendly(err))
            seen.setdefault(e.path, e)
        return None, list(seen.values())


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
