"""Code-defined parts: tools, hooks, effects and thread endpoints written in Python.

Define them with ``define_tool``, ``define_hook``, ``define_effect`` and
``define_thread_endpoint`` (each usable as a call or as a decorator), side handlers
with ``define_handler`` (``runtime.tools.handlers``) and user endpoints with
``define_user_endpoint`` (``runtime.tools.user_endpoints``), in modules under
``agents/tools/``, ``agents/hooks/``, ``agents/effects/``, ``agents/api/``,
``agents/handlers/`` and ``agents/users/`` of a project folder or package; ``discover`` imports those
modules and collects every definition into a ``Registry``. Two definitions
with the same name are an error at start-up, never a silent override.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import importlib.util
import inspect
import pkgutil
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Literal, Required, TypedDict, TypeVar, overload

from pydantic import BaseModel

from runtime.core.tool_names import validate_tool_name
from runtime.core.user_scope import USER_HOOK_NAMES
from runtime.definitions.validation import HOOK_NAMES
from runtime.tools.controllers import ControllerDefinition
from runtime.tools.handlers import HandlerDefinition
from runtime.tools.tool_env import DeclarationError, VariableDefinition, parse_declarations
from runtime.tools.user_endpoints import UserEndpointDefinition

AnyFn = Callable[..., Any]
F = TypeVar("F", bound=AnyFn)
HttpMethod = Literal["GET", "POST", "PUT", "PATCH", "DELETE"]
EndpointAccess = Literal["public"]
METHODS: tuple[str, ...] = ("get", "post", "put", "patch", "delete")
EMPTY_OBJECT_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


class RegistryError(Exception):
    """A definition is malformed or clashes with another one."""


class DuplicateDefinitionError(RegistryError):
    """Two definitions of the same kind share a name."""


def args_json_schema(model: type[BaseModel] | None) -> dict[str, Any]:
    """The JSON schema of an arguments model, as sent to the LLM (objects closed)."""
    if model is None:
        return dict(EMPTY_OBJECT_SCHEMA)
    return _close_objects(model.model_json_schema())


def _close_objects(node: Any) -> Any:
    if isinstance(node, dict):
        out = {k: _close_objects(v) for k, v in node.items()}
        if out.get("type") == "object" and "properties" in out:
            out.setdefault("additionalProperties", False)
        return out
    if isinstance(node, list):
        return [_close_objects(v) for v in node]
    return node


async def call_maybe_async(fn: AnyFn, *args: Any) -> Any:
    """Call ``fn`` and await the result when it is awaitable (tools may be sync or async)."""
    result = fn(*args)
    if inspect.isawaitable(result):
        return await result
    return result


# --- definitions -----------------------------------------------------------------------


@dataclass(frozen=True)
class ToolDefinition:
    """A native tool: ``fn(state, args)`` (or ``fn(state)`` without an args model)."""

    name: str
    description: str
    args_model: type[BaseModel] | None
    fn: AnyFn
    # Env values the tool needs (spec ``variables``/``tenvs``); see runtime.tools.tool_env.
    variables: tuple[VariableDefinition, ...] = ()
    # Spec 0.2.0 ``progressArgument``: the argument whose value ``tool_call_started`` carries
    # as ``progress``, sent while the model still streams the rest (runtime.step.tool_progress).
    progress_argument: str | None = None

    def __post_init__(self) -> None:
        # validateToolName: refused at definition time, so start-up names the file.
        problem = validate_tool_name(self.name)
        if problem is not None:
            raise RegistryError(f"define_tool: {problem}")
        if self.progress_argument is not None:
            self._check_progress_argument(self.progress_argument)

    def _check_progress_argument(self, name: str) -> None:
        """A progress argument the model can never send would silently never fire: refused."""
        fields = self.args_model.model_fields if self.args_model is not None else {}
        known = {field.alias or key for key, field in fields.items()}
        if not isinstance(name, str) or name not in known:
            offered = ", ".join(sorted(known)) or "none"
            raise RegistryError(
                f"define_tool {self.name}: progress_argument {name!r} is not one of the "
                f"tool's arguments (it has: {offered})."
            )

    @property
    def args_schema(self) -> dict[str, Any]:
        """JSON schema of the arguments."""
        return args_json_schema(self.args_model)

    async def __call__(self, state: Any, args: BaseModel | None = None) -> Any:
        """Run the tool with already-validated arguments."""
        if self.args_model is None:
            return await call_maybe_async(self.fn, state)
        return await call_maybe_async(self.fn, state, args)


@dataclass(frozen=True)
class HookDefinition:
    """A hook implementation: ``hook`` is one of the fourteen hook names, ``id`` what prompts list."""

    id: str
    hook: str
    fn: AnyFn

    @property
    def name(self) -> str:
        """The id (hooks are referenced by id)."""
        return self.id

    @property
    def description(self) -> str:
        """The implementation's docstring, first line."""
        return (inspect.getdoc(self.fn) or "").split("\n", 1)[0]


@dataclass(frozen=True)
class EffectDefinition:
    """An effect handler ``handler(state, args)``: scheduled work that returns nothing to the LLM."""

    name: str
    description: str
    args_model: type[BaseModel] | None
    fn: AnyFn

    @property
    def args_schema(self) -> dict[str, Any]:
        """JSON schema of the arguments."""
        return args_json_schema(self.args_model)


@dataclass(frozen=True)
class EndpointDefinition:
    """A thread endpoint ``handler(request, state, params)`` mounted under ``/api/threads/{id}``."""

    name: str
    fn: AnyFn
    method: str | None = None
    route: str | None = None
    # True: the handler's responses are sent as it built them, without the web layer's safe
    # defaults for someone else's bytes (nosniff, a sandboxing CSP, attachment for active
    # types). Only for handlers that never echo user-controlled content as a document.
    active_content: bool = False
    # Spec 0.2.0 ``access: 'public'``: anyone may call it, signed in or not; the handler
    # learns who from its ``auth`` argument. ``None``: the thread's own access rule.
    access: EndpointAccess | None = None

    @property
    def public(self) -> bool:
        """Whether anonymous callers reach the handler."""
        return self.access == "public"

    @property
    def takes_auth(self) -> bool:
        """Whether the handler declares the spec 0.2.0 4th parameter (``auth``): handlers
        written with three keep being called with three. A 4th parameter with a default
        counts only when it is named ``auth`` (``n=…`` is a closure's value, not a slot)."""
        return _takes_auth(self.fn)

    @property
    def description(self) -> str:
        """The handler's docstring, first line."""
        return (inspect.getdoc(self.fn) or "").split("\n", 1)[0]

    def located(self, method: str, route: str) -> EndpointDefinition:
        """A copy with the method and route derived from its file."""
        return dataclasses.replace(self, method=self.method or method, route=self.route or route)


class ThreadEndpointAuth(TypedDict):
    """A thread endpoint's 4th argument (spec 0.2.0 ``ThreadEndpointAuth``): who calls
    (``None``: nobody signed in, a public endpoint) and whether they may use the thread."""

    caller: Any  # runtime.store.protocol.ThreadUser | None (the store layer sits under tools)
    threadAccess: bool


@functools.lru_cache(maxsize=256)
def _takes_auth(fn: AnyFn) -> bool:
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    positional = [p for p in parameters if p.kind in kinds]
    if len(positional) < 4:
        return False
    fourth = positional[3]
    return fourth.default is inspect.Parameter.empty or fourth.name == "auth"


AnyDefinition = (
    ToolDefinition
    | HookDefinition
    | EffectDefinition
    | EndpointDefinition
    | ControllerDefinition
    | HandlerDefinition
    | UserEndpointDefinition
)


# --- define_* ----------------------------------------------------------------------------


def _is_args_model(value: Any) -> bool:
    return inspect.isclass(value) and issubclass(value, BaseModel)


class DefineToolOptions(TypedDict, total=False):
    """The object form of ``define_tool`` (spec ``DefineToolOptions``)."""

    description: Required[str]
    execute: Required[AnyFn]
    args: type[BaseModel] | None
    name: str
    variables: list[Any]
    tenvs: Any
    progressArgument: str


_OPTION_KEYS = frozenset(DefineToolOptions.__annotations__)


@overload
def define_tool(description: DefineToolOptions) -> ToolDefinition: ...


@overload
def define_tool(
    description: str,
    args: type[BaseModel] | None = None,
    *,
    name: str | None = None,
    variables: list[Any] | None = None,
    tenvs: Any = None,
    progress_argument: str | None = None,
) -> Callable[[AnyFn], ToolDefinition]: ...


@overload
def define_tool(
    description: str,
    args: type[BaseModel] | None | AnyFn,
    fn: AnyFn,
    *,
    name: str | None = None,
    variables: list[Any] | None = None,
    tenvs: Any = None,
    progress_argument: str | None = None,
) -> ToolDefinition: ...


@overload
def define_tool(
    description: str,
    args: AnyFn,
    *,
    name: str | None = None,
    variables: list[Any] | None = None,
    tenvs: Any = None,
    progress_argument: str | None = None,
) -> ToolDefinition: ...


def define_tool(
    description: Any,
    args: Any = None,
    fn: AnyFn | None = None,
    *,
    name: str | None = None,
    variables: list[Any] | None = None,
    tenvs: Any = None,
    progress_argument: str | None = None,
) -> Any:
    """Define a tool: ``define_tool(description, ArgsModel | None, fn)``.

    Also ``define_tool(description, fn)`` (no arguments), ``@define_tool(description,
    ArgsModel)`` as a decorator, and the object form ``define_tool({"description": …,
    "args": …, "execute": fn, "variables": […], "tenvs": …})``. The name is ``name``
    or the function's name. ``variables``/``tenvs`` declare the env values it needs.
    ``progress_argument`` (spec ``progressArgument``) names the argument that
    ``tool_call_started`` carries as ``progress``, as soon as the model has streamed it.
    """
    if isinstance(description, Mapping):
        return _from_options(description)
    if args is not None and not _is_args_model(args) and callable(args) and fn is None:
        args, fn = None, args
    try:
        declared = parse_declarations(variables, tenvs)
    except DeclarationError as exc:
        raise RegistryError(f"define_tool {name or getattr(fn, '__name__', '')}: {exc}") from None

    def build(target: AnyFn) -> ToolDefinition:
        if args is not None and not _is_args_model(args):
            raise RegistryError("define_tool: args must be a pydantic model class or None")
        return ToolDefinition(
            name or target.__name__, description, args, target, declared, progress_argument
        )

    return build(fn) if fn is not None else build


def _from_options(options: Mapping[str, Any]) -> ToolDefinition:
    unknown = sorted(set(options) - _OPTION_KEYS)
    if unknown:
        raise RegistryError(f"define_tool: unknown options {unknown}")
    description, execute = options.get("description"), options.get("execute")
    if not isinstance(description, str) or not callable(execute):
        raise RegistryError(
            "define_tool: options need a description string and an execute function"
        )
    return define_tool(  # type: ignore[call-overload,no-any-return]
        description,
        options.get("args"),
        execute,
        name=options.get("name"),
        variables=options.get("variables"),
        tenvs=options.get("tenvs"),
        progress_argument=options.get("progressArgument"),
    )


def define_hook(
    hook: str | Mapping[str, Any] | None = None,
    fn: AnyFn | None = None,
    *,
    id: str | None = None,
    execute: AnyFn | None = None,
) -> Any:
    """Define a hook: ``define_hook(name, fn)``, ``define_hook({hook, id, execute})``,
    ``define_hook(hook=…, id=…, execute=…)`` or ``@define_hook(name)``.

    ``name`` is one of the fourteen hook names (``HOOK_NAMES``); the id (default: the function's
    name) is what a prompt's or agent's ``hooks`` list refers to. The three user hooks
    (``USER_HOOK_NAMES``: ``user_value_changed``, ``user_client_attached``,
    ``user_client_detached``) are listed nowhere: each registered one runs in the person's scope.
    """
    if isinstance(hook, Mapping):
        return define_hook(hook.get("hook"), id=hook.get("id"), execute=hook.get("execute"))
    if hook not in HOOK_NAMES and hook not in USER_HOOK_NAMES:
        names = ", ".join((*HOOK_NAMES, *USER_HOOK_NAMES))
        raise RegistryError(f"Unknown hook name {hook!r}; expected one of: {names}")
    target = fn or execute

    def build(impl: AnyFn) -> HookDefinition:
        return HookDefinition(id or impl.__name__, str(hook), impl)

    return build(target) if target is not None else build


def define_effect(
    description: str,
    args: Any = None,
    handler: AnyFn | None = None,
    *,
    name: str | None = None,
) -> Any:
    """Define an effect: ``define_effect(description, ArgsModel | None, handler)`` or decorator."""
    if args is not None and not _is_args_model(args) and callable(args) and handler is None:
        args, handler = None, args

    def build(target: AnyFn) -> EffectDefinition:
        return EffectDefinition(name or target.__name__, description, args, target)

    return build(handler) if handler is not None else build


def define_thread_endpoint(
    handler: AnyFn | None = None,
    *,
    method: HttpMethod | None = None,
    route: str | None = None,
    name: str | None = None,
    active_content: bool = False,
    access: str | None = None,
) -> Any:
    """Define a thread endpoint ``async handler(request, state, params)``, or with a 4th
    parameter ``auth`` (spec 0.2.0: ``{"caller": ThreadUser | None, "threadAccess": bool}``).

    The method and route come from the file name when discovered
    (``agents/api/invoke.post.py`` → ``POST /invoke``; ``files/[id].py`` →
    ``GET /files/{id}``) unless given here. Routing itself lives in the web layer.
    ``active_content=True`` sends the handler's responses without the safe defaults
    for user content (see docs/security.md, "Serving user files"). ``access="public"``
    lets anyone call it, signed in or not (``caller`` ``None``, ``threadAccess`` false).
    """
    if access is not None and access != "public":
        raise RegistryError(
            f"define_thread_endpoint: access must be 'public' or left out, not {access!r}."
        )

    def build(target: AnyFn) -> EndpointDefinition:
        return EndpointDefinition(
            name or target.__name__,
            target,
            method,
            route,
            active_content,
            "public" if access else None,
        )

    return build(handler) if handler is not None else build


# --- the registry -------------------------------------------------------------------------


class Registry:
    """Registered tools, hooks, effects, endpoints and side handlers, by name."""

    def __init__(self, *definitions: AnyDefinition) -> None:
        self.tools: dict[str, ToolDefinition] = {}
        self.hooks: dict[str, HookDefinition] = {}
        self.effects: dict[str, EffectDefinition] = {}
        self.endpoints: dict[str, EndpointDefinition] = {}
        self.controllers: dict[str, ControllerDefinition] = {}
        self.handlers: dict[str, HandlerDefinition] = {}
        self.user_endpoints: dict[str, UserEndpointDefinition] = {}
        self.add(*definitions)

    def add(self, *definitions: AnyDefinition, origin: str = "") -> Registry:
        """Register definitions; a second definition with a taken name raises."""
        for item in definitions:
            if isinstance(item, HandlerDefinition):
                item = item.located(getattr(item.execute, "__name__", ""))
            table, key = self._slot(item)
            if key in table:
                where = f" (in {origin})" if origin else ""
                kind = type(item).__name__.removesuffix("Definition").lower()
                raise DuplicateDefinitionError(f"Duplicate {kind} name {key!r}{where}")
            table[key] = item
        return self

    def _slot(self, item: AnyDefinition) -> tuple[dict[str, Any], str]:
        if isinstance(item, ToolDefinition):
            return self.tools, item.name
        if isinstance(item, HookDefinition):
            return self.hooks, item.id
        if isinstance(item, EffectDefinition):
            return self.effects, item.name
        if isinstance(item, HandlerDefinition):
            return self.handlers, item.name
        if isinstance(item, ControllerDefinition):
            return self.controllers, f"{item.method or 'GET'} {item.route or '/' + item.name}"
        if isinstance(item, UserEndpointDefinition):
            return self.user_endpoints, f"{item.method or 'GET'} {item.route or '/' + item.name}"
        return self.endpoints, f"{item.method or 'GET'} {item.route or '/' + item.name}"

    def user_hooks(self, hook: str) -> list[HookDefinition]:
        """Every registered implementation of the user hook ``hook``, by id."""
        return [h for _, h in sorted(self.hooks.items()) if h.hook == hook]

    def catalog(self) -> dict[str, list[dict[str, Any]]]:
        """Names, descriptions and argument schemas, for the admin catalog and validation."""
        return {
            "tools": [_entry(t.name, t.description, t.args_schema) for t in self.tools.values()],
            "hooks": [
                {"name": h.id, "hook": h.hook, "description": h.description}
                for h in self.hooks.values()
            ],
            "effects": [
                _entry(e.name, e.description, e.args_schema) for e in self.effects.values()
            ],
            "endpoints": [
                {"name": e.name, "method": e.method, "route": e.route, "description": e.description}
                for e in self.endpoints.values()
            ],
            "controllers": [
                {
                    "name": c.name,
                    "method": c.method,
                    "route": c.route,
                    "public": c.public,
                    "description": c.description,
                }
                for c in self.controllers.values()
            ],
            "handlers": [
                {"name": h.name, "description": h.description} for h in self.handlers.values()
            ],
        }


def _entry(name: str, description: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "description": description, "args_schema": schema}


# --- discovery --------------------------------------------------------------------------

KINDS: dict[str, type] = {
    "tools": ToolDefinition,
    "hooks": HookDefinition,
    "effects": EffectDefinition,
    "api": EndpointDefinition,
    "controllers": ControllerDefinition,
    "handlers": HandlerDefinition,
    "users": UserEndpointDefinition,
}


def discover(
    folders: Iterable[str | Path] = (),
    packages: Iterable[str] = (),
    registry: Registry | None = None,
) -> Registry:
    """Import the ``agents/{tools,hooks,effects,api,controllers,handlers,users}`` modules of
    project folders and packages.

    A folder may be the project root (containing ``agents/``) or the ``agents``
    folder itself; a package is a dotted name whose ``agents`` subpackage holds
    the modules. Files starting with ``_`` are skipped.
    """
    registry = registry or Registry()
    seen: set[int] = set()  # a definition imported into a second module is collected once
    for folder in folders:
        _discover_folder(Path(folder), registry, seen)
    for package in packages:
        _discover_package(package, registry, seen)
    return registry


def _discover_folder(folder: Path, registry: Registry, seen: set[int]) -> None:
    base = folder if folder.name == "agents" else folder / "agents"
    for kind, cls in KINDS.items():
        root = base / kind
        if not root.is_dir():
            continue
        for path in sorted(root.rglob("*.py")):
            if path.name.startswith("_"):
                continue
            module = _load_file(path)
            relative = path.relative_to(root).as_posix()
            _collect(module, cls, registry, relative, str(path), seen)


def _discover_package(package: str, registry: Registry, seen: set[int]) -> None:
    for kind, cls in KINDS.items():
        name = f"{package}.agents.{kind}"
        try:
            parent = importlib.import_module(name)
        except ModuleNotFoundError:
            continue
        for info in pkgutil.walk_packages(parent.__path__, prefix=name + "."):
            if info.name.rsplit(".", 1)[-1].startswith("_"):
                continue
            module = importlib.import_module(info.name)
            relative = info.name.removeprefix(name + ".").replace(".", "/") + ".py"
            _collect(module, cls, registry, relative, info.name, seen)


def _load_file(path: Path) -> ModuleType:
    slug = re.sub(r"\W", "_", str(path.with_suffix("")))
    module_name = f"_standard_agents_code.{slug}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise RegistryError(f"Cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


def _collect(
    module: ModuleType, cls: type, registry: Registry, relative: str, origin: str, seen: set[int]
) -> None:
    for value in vars(module).values():
        if not isinstance(value, cls) or id(value) in seen:
            continue
        seen.add(id(value))
        if isinstance(value, EndpointDefinition | ControllerDefinition | UserEndpointDefinition):
            value = value.located(*endpoint_route(relative))
        elif isinstance(value, HandlerDefinition):
            value = value.located(relative.removesuffix(".py").replace("/", "."))
        registry.add(value, origin=origin)


def endpoint_route(relative: str) -> tuple[str, str]:
    """Method and route of an endpoint file: ``files/[id].post.py`` → ``('POST', '/files/{id}')``."""
    stem = relative.removesuffix(".py")
    method = "GET"
    head, _, suffix = stem.rpartition(".")
    if head and suffix.lower() in METHODS:
        stem, method = head, suffix.upper()
    parts = [re.sub(r"^\[(.+)\]$", r"{\1}", p) for p in stem.split("/")]
    if parts and parts[-1] == "index":
        parts.pop()
    return method, "/" + "/".join(parts)
