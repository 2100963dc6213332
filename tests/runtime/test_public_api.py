"""The extension API is a contract (issue #53): every name user code imports keeps
importing from every path the docs ever gave, whatever moves inside the engine."""

from __future__ import annotations

import importlib
import re
import warnings
from pathlib import Path

import pytest

import runtime.extend

DOCS = Path(__file__).resolve().parents[2] / "docs"
# The paths of the docs before the layout step (issue #37 moved the modules behind them).
MOVED = {
    "runtime.registry": (
        "Registry",
        "RegistryError",
        "DuplicateDefinitionError",
        "ToolDefinition",
        "HookDefinition",
        "EffectDefinition",
        "EndpointDefinition",
        "DefineToolOptions",
        "define_tool",
        "define_hook",
        "define_effect",
        "define_thread_endpoint",
        "discover",
    ),
    "runtime.controllers": ("ControllerDefinition", "define_controller"),
    "runtime.results": ("ToolResult", "success", "failure"),
    "runtime.memory_store": ("MemoryStore",),
}
# The paths of the docs after it: internal modules, kept without a warning.
KEPT = {
    "runtime.tools.registry": MOVED["runtime.registry"],
    "runtime.tools.controllers": MOVED["runtime.controllers"],
    "runtime.core.results": MOVED["runtime.results"],
}
_IMPORT = re.compile(r"^\s*from (runtime[\w.]*) import ([\w, ]+)$", re.MULTILINE)


def _documented() -> list[tuple[str, str]]:
    found = set()
    for page in DOCS.glob("*.md"):
        for module, names in _IMPORT.findall(page.read_text()):
            found.update((module, n.strip()) for n in names.split(",") if n.strip())
    return sorted(found)


def test_every_import_the_docs_show_works_without_a_warning() -> None:
    documented = _documented()
    assert ("runtime.extend", "define_tool") in documented
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        for module, name in documented:
            assert hasattr(importlib.import_module(module), name), f"{module}.{name}"


def test_the_public_module_exports_every_name_it_lists() -> None:
    for name in runtime.extend.__all__:
        assert getattr(runtime.extend, name) is not None, name
    every = {n for names in MOVED.values() for n in names} - {"MemoryStore"}
    assert every <= set(runtime.extend.__all__)


@pytest.mark.parametrize(("module", "names"), sorted(MOVED.items()))
def test_an_old_import_path_still_works_and_names_the_new_one(
    module: str, names: tuple[str, ...]
) -> None:
    old = importlib.import_module(module)
    for name in names:
        with pytest.warns(DeprecationWarning, match=rf"{module}\.{name} moved: import it from"):
            value = getattr(old, name)
        new_home = "runtime.store.memory" if name == "MemoryStore" else "runtime.extend"
        assert value is getattr(importlib.import_module(new_home), name)
    with pytest.raises(AttributeError):
        old.not_a_name  # noqa: B018


@pytest.mark.parametrize(("module", "names"), sorted(KEPT.items()))
def test_the_post_layout_paths_keep_working(module: str, names: tuple[str, ...]) -> None:
    kept = importlib.import_module(module)
    for name in names:
        assert getattr(kept, name) is getattr(runtime.extend, name)


def test_a_tool_written_against_the_old_path_still_registers(tmp_path: Path) -> None:
    """An agents folder from before the layout step loads, with the warning."""
    tools = tmp_path / "agents" / "tools"
    tools.mkdir(parents=True)
    (tools / "ping.py").write_text(
        "from runtime.registry import define_tool\n\n"
        "@define_tool('Ping.')\n"
        "async def ping(state):\n"
        "    return 'pong'\n"
    )
    with pytest.warns(DeprecationWarning, match="runtime.registry.define_tool moved"):
        registry = runtime.extend.discover(folders=[tmp_path])
    assert "ping" in registry.tools


def test_define_handler_is_public_and_discovered_from_agents_handlers(tmp_path: Path) -> None:
    """Spec 0.2.0 ``defineHandler``: named after its file, as the reference names it."""
    assert {"define_handler", "HandlerDefinition", "HandlerError"} <= set(runtime.extend.__all__)
    handlers = tmp_path / "agents" / "handlers"
    handlers.mkdir(parents=True)
    (handlers / "echo.py").write_text(
        "from runtime.extend import define_handler\n\n"
        "handler = define_handler({\n"
        "    'description': 'Says it back.',\n"
        "    'execute': lambda state, message: message.content,\n"
        "})\n"
    )
    (handlers / "_private.py").write_text("raise RuntimeError('never imported')\n")
    registry = runtime.extend.discover(folders=[tmp_path])
    assert registry.catalog()["handlers"] == [{"name": "echo", "description": "Says it back."}]
