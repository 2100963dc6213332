"""Tool env declarations (spec ``ToolVariables``/``ToolTenvs``) and the walk that finds them.

A code tool says which env values it needs: ``variables`` is a list of
``VariableDefinition`` (name, ``text``/``secret``, required, description) and
``tenvs`` the older form, an object shape whose string fields are ``text`` values
(required unless optional). ``needed_env`` walks an agent's reachable definitions
(side prompts, includes, tools, sub-prompts, agents as tools, recursively) and
``missing_required`` asks the store's normal env resolution which required ones have
no value, so a session can fail before its first model request.
"""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import BaseModel

from runtime.core.spec import PromptIncludePart, PromptVariable

if TYPE_CHECKING:
    from runtime.core.spec import AgentDefinition, PromptDefinition
    from runtime.definitions.loader import DefinitionLoader
    from runtime.store.protocol import Store

VariableType = Literal["text", "secret"]
VARIABLE_TYPES: tuple[str, ...] = ("text", "secret")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
_KEYS = {"name", "type", "required", "description", "scoped"}


class DeclarationError(ValueError):
    """A tool's env declaration is malformed (turned into a RegistryError at start-up)."""


@dataclass(frozen=True)
class VariableDefinition:
    """One env value a tool needs. Undeclared types default to ``secret``, as env values do."""

    name: str
    type: VariableType = "secret"
    required: bool = True
    description: str = ""
    scoped: bool = False

    def dump(self) -> dict[str, Any]:
        """The declaration as JSON (never a value: declarations hold none)."""
        return {
            "name": self.name,
            "type": self.type,
            "required": self.required,
            "description": self.description,
            "scoped": self.scoped,
        }


ToolVariables = list[VariableDefinition | Mapping[str, Any]]
# ``TenvRawShape``: env name → ``str`` (required) or ``str | None`` (optional).
TenvRawShape = Mapping[str, Any]
# ``ToolTenvs``: a raw shape, or a pydantic model whose fields are strings.
ToolTenvs = TenvRawShape | type[BaseModel]


def _check_name(name: Any, where: str) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise DeclarationError(
            f"{where}: env name {name!r} must be letters, digits and _ "
            "(not starting with a digit, at most 128 characters)"
        )
    return name


def _variable(item: Any, index: int) -> VariableDefinition:
    where = f"variables[{index}]"
    if isinstance(item, VariableDefinition):
        data: Mapping[str, Any] = item.dump()
    elif isinstance(item, Mapping):
        data = item
    else:
        raise DeclarationError(f"{where}: expected an object with a name, got {item!r}")
    unknown = sorted(set(data) - _KEYS)
    if unknown:
        raise DeclarationError(f"{where}: unknown keys {unknown} (allowed: {sorted(_KEYS)})")
    name = _check_name(data.get("name"), where)
    kind = data.get("type", "secret")
    if kind not in VARIABLE_TYPES:
        raise DeclarationError(f"{where} ({name}): type must be 'text' or 'secret', got {kind!r}")
    flags = {k: data.get(k, k == "required") for k in ("required", "scoped")}
    for key, value in flags.items():
        if not isinstance(value, bool):
            raise DeclarationError(f"{where} ({name}): {key} must be true or false")
    description = data.get("description", "")
    if not isinstance(description, str):
        raise DeclarationError(f"{where} ({name}): description must be a string")
    return VariableDefinition(name, kind, flags["required"], description, flags["scoped"])


def _is_optional_str(annotation: Any) -> bool | None:
    """``False`` for ``str``, ``True`` for ``str | None``, ``None`` for anything else."""
    if annotation is str:
        return False
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = set(typing.get_args(annotation))
        if args == {str, type(None)}:
            return True
    return None


def _tenvs(shape: Any) -> list[VariableDefinition]:
    if isinstance(shape, type) and issubclass(shape, BaseModel):
        fields = {
            name: (info.annotation, not info.is_required(), info.description or "")
            for name, info in shape.model_fields.items()
        }
    elif isinstance(shape, Mapping):
        fields = {name: (annotation, False, "") for name, annotation in shape.items()}
    else:
        raise DeclarationError("tenvs must be a mapping of names to str / str | None, or a model")
    out = []
    for name, (annotation, has_default, description) in fields.items():
        _check_name(name, "tenvs")
        optional = _is_optional_str(annotation)
        if optional is None:
            raise DeclarationError(f"tenvs ({name}): the type must be str or str | None")
        required = not (optional or has_default)
        out.append(VariableDefinition(name, "text", required, description))
    return out


def parse_declarations(
    variables: Iterable[Any] | None, tenvs: Any = None
) -> tuple[VariableDefinition, ...]:
    """Validate a tool's ``variables`` and ``tenvs``; raises ``DeclarationError`` on any problem."""
    if variables is not None and (
        isinstance(variables, (str, Mapping)) or not _iterable(variables)
    ):
        raise DeclarationError("variables must be a list of variable definitions")
    found = [_variable(item, i) for i, item in enumerate(variables or [])]
    if tenvs is not None:
        found += _tenvs(tenvs)
    seen: set[str] = set()
    for item in found:
        if item.name in seen:
            raise DeclarationError(f"env value {item.name!r} is declared twice")
        seen.add(item.name)
    return tuple(found)


def _iterable(value: Any) -> bool:
    try:
        iter(value)
    except TypeError:
        return False
    return True


# --- the walk ----------------------------------------------------------------------------


@dataclass(frozen=True)
class EnvNeed:
    """A declared value, the tool that declares it and the prompt that offers that tool."""

    variable: VariableDefinition
    tool: str
    prompt: str
    via_agent: str | None = None  # set when reached through an agent used as a tool
    declared_by: str = "tool"  # "prompt": the prompt's own ``variables`` (spec 0.2.0)


class DeclaringTool(Protocol):
    """A code tool as the walk sees it: the env values it declares."""

    @property
    def variables(self) -> tuple[VariableDefinition, ...]: ...


class ToolDeclarations(Protocol):
    """The code tools by name (``runtime.tools.registry.Registry`` is one; it builds on this module)."""

    @property
    def tools(self) -> Mapping[str, DeclaringTool]: ...


async def needed_env(
    defs: DefinitionLoader, registry: ToolDeclarations, agent: AgentDefinition
) -> list[EnvNeed]:
    """Every tool declaration reachable from ``agent``, less the values a prompt's tool entry
    gives (``{"name": …, "env": {…}}`` answers before any tier, for sub-prompts and children
    too). Each prompt is visited once per set of given names, so cycles end."""
    needs: list[EnvNeed] = []
    seen_agents: set[str] = {agent.name}
    seen: set[tuple[str, frozenset[str]]] = set()
    empty: frozenset[str] = frozenset()
    todo: list[tuple[str, str | None, frozenset[str]]] = [
        (prompt, None, empty) for prompt in agent.side_prompts()
    ]
    while todo:
        name, via, given = todo.pop()
        if (name, given) in seen:
            continue
        seen.add((name, given))
        prompt = await defs.find_prompt(name)
        if prompt is None:
            continue
        todo += [(p, via, given) for p in _includes(prompt)]
        needs += [
            EnvNeed(_declared(v), name, name, via, "prompt")
            for v in prompt.variables or []
            if v.name not in given
        ]
        for entry in prompt.tools or []:
            if not isinstance(entry, str) and entry.optional:
                continue  # behind an optional gate: absent unless its env enables it
            tool = entry if isinstance(entry, str) else entry.name
            passed = given if isinstance(entry, str) else given | frozenset(entry.env or {})
            native = registry.tools.get(tool)
            if native is not None:
                needs += [
                    EnvNeed(v, tool, name, via) for v in native.variables if v.name not in passed
                ]
            elif await defs.find_prompt(tool) is not None:
                todo.append((tool, via, passed))
            elif tool not in seen_agents and (child := await defs.find_agent(tool)):
                seen_agents.add(tool)
                todo += [(p, via or tool, passed) for p in child.side_prompts()]
    return needs


def _declared(variable: PromptVariable) -> VariableDefinition:
    return VariableDefinition(
        variable.name, variable.type, variable.required, variable.description, variable.scoped
    )


def _includes(prompt: PromptDefinition) -> list[str]:
    parts = prompt.prompt if isinstance(prompt.prompt, list) else []
    return [p.prompt for p in parts if isinstance(p, PromptIncludePart)]


async def missing_required(store: Store, thread_id: str, needs: list[EnvNeed]) -> list[EnvNeed]:
    """The required needs no tier resolves for this thread (values are looked up, never kept)."""
    missing: list[EnvNeed] = []
    checked: set[tuple[str, str]] = set()
    for need in needs:
        if not need.variable.required or (need.variable.scoped and need.via_agent):
            continue  # scoped values are given when the child is created, not inherited
        key = (need.variable.name, need.prompt)
        if key in checked:
            continue
        checked.add(key)
        if await store.resolve_env(thread_id, need.variable.name, need.prompt) is None:
            missing.append(need)
    return missing


def missing_env_message(missing: list[EnvNeed]) -> str:
    """``Missing required env value "X" (needed by tool "t")``, one clause per value."""
    parts = [f'"{m.variable.name}" (needed by {m.declared_by} "{m.tool}")' for m in missing]
    return "Missing required env value" + ("s " if len(parts) > 1 else " ") + ", ".join(parts)
