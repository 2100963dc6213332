"""Code-defined parts: define_* forms, schemas, duplicates, discovery from folders and packages."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, Field

from runtime.tools.registry import (
    DuplicateDefinitionError,
    Registry,
    RegistryError,
    define_effect,
    define_hook,
    define_thread_endpoint,
    define_tool,
    discover,
    endpoint_route,
)


class Args(BaseModel):
    city: str = Field(description="City name")
    days: int = 1


def test_define_tool_call_and_decorator_forms() -> None:
    async def weather(state: Any, args: Args) -> str:
        return args.city

    direct = define_tool("Get the weather", Args, weather)
    decorated = define_tool("Get the weather", Args)(weather)
    named = define_tool("Get the weather", Args, weather, name="forecast")
    assert (direct.name, decorated.name, named.name) == ("weather", "weather", "forecast")
    assert direct.description == "Get the weather" and direct.args_model is Args


def test_define_tool_without_arguments() -> None:
    async def ping(state: Any) -> str:
        return "pong"

    tool = define_tool("Ping", ping)
    assert tool.args_model is None and tool.args_schema == {"type": "object", "properties": {}}

    @define_tool("Ping again")
    async def ping2(state: Any) -> str:
        return "pong"

    assert ping2.name == "ping2" and ping2.args_model is None


def test_args_schema_is_the_pydantic_json_schema_closed() -> None:
    tool = define_tool("Weather", Args, lambda state, args: None, name="w")
    schema = tool.args_schema
    assert schema["properties"]["city"] == {
        "description": "City name",
        "title": "City",
        "type": "string",
    }
    assert schema["required"] == ["city"] and schema["additionalProperties"] is False


def test_define_tool_rejects_a_non_model_args() -> None:
    with pytest.raises(RegistryError):
        define_tool("Bad", dict, lambda state, args: None)  # type: ignore[call-overload]


def test_define_hook_rejects_unknown_hook_names() -> None:
    with pytest.raises(RegistryError, match="Unknown hook name"):
        define_hook("before_everything", lambda state: None)


def test_define_effect_and_endpoint() -> None:
    async def send_reminder(state: Any, args: Args) -> None:
        return None

    effect = define_effect("Send a reminder", Args, send_reminder)
    assert (effect.name, effect.description, effect.args_schema["required"]) == (
        "send_reminder",
        "Send a reminder",
        ["city"],
    )

    @define_thread_endpoint(method="POST", route="/invoke")
    async def invoke(request: Any, state: Any, params: dict[str, str]) -> dict[str, bool]:
        """Queue a tool."""
        return {"queued": True}

    assert (invoke.method, invoke.route, invoke.description) == ("POST", "/invoke", "Queue a tool.")


def test_duplicate_names_are_an_error_not_an_override() -> None:
    first = define_tool("One", lambda state: "1", name="same")
    second = define_tool("Two", lambda state: "2", name="same")
    registry = Registry(first)
    with pytest.raises(DuplicateDefinitionError, match="Duplicate tool name 'same'"):
        registry.add(second)
    assert registry.tools["same"] is first


def test_registry_catalog_lists_names_descriptions_and_schemas() -> None:
    tool = define_tool("Weather", Args, lambda state, args: None, name="weather")

    async def keep(state: Any, messages: list[Any]) -> list[Any]:
        """Keep recent messages."""
        return messages

    registry = Registry(tool, define_hook("filter_messages", keep))
    catalog = registry.catalog()
    assert catalog["tools"][0]["name"] == "weather" and catalog["tools"][0]["args_schema"][
        "required"
    ] == ["city"]
    assert catalog["hooks"] == [
        {"name": "keep", "hook": "filter_messages", "description": "Keep recent messages."}
    ]


def _write(path: Path, source: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source))


TOOL_SOURCE = """
from pydantic import BaseModel
from runtime.tools.registry import define_tool

class A(BaseModel):
    q: str

@define_tool("Search things", A)
async def search(state, args):
    return args.q
"""


def test_discover_from_a_project_folder(tmp_path: Path) -> None:
    _write(tmp_path / "agents/tools/search.py", TOOL_SOURCE)
    _write(tmp_path / "agents/tools/_private.py", "raise RuntimeError('never imported')")
    _write(
        tmp_path / "agents/hooks/recent.py",
        """
        from runtime.tools.registry import define_hook

        async def keep_recent(state, messages):
            return messages[-10:]

        hook = define_hook("filter_messages", keep_recent)
        """,
    )
    _write(
        tmp_path / "agents/effects/remind.py",
        """
        from runtime.tools.registry import define_effect

        @define_effect("Remind the user")
        async def remind(state, args=None):
            return None
        """,
    )
    _write(
        tmp_path / "agents/api/files/[id].post.py",
        """
        from runtime.tools.registry import define_thread_endpoint

        @define_thread_endpoint
        async def upload(request, state, params):
            return {"id": params["id"]}
        """,
    )
    registry = discover(folders=[tmp_path])
    assert list(registry.tools) == ["search"]
    assert registry.tools["search"].args_schema["required"] == ["q"]
    assert (
        list(registry.hooks) == ["keep_recent"]
        and registry.hooks["keep_recent"].hook == "filter_messages"
    )
    assert list(registry.effects) == ["remind"]
    endpoint = next(iter(registry.endpoints.values()))
    assert (endpoint.method, endpoint.route, endpoint.name) == ("POST", "/files/{id}", "upload")


def test_discover_accepts_the_agents_folder_itself(tmp_path: Path) -> None:
    _write(tmp_path / "agents/tools/search.py", TOOL_SOURCE)
    assert list(discover(folders=[tmp_path / "agents"]).tools) == ["search"]


def test_discover_fails_on_duplicate_names_across_files(tmp_path: Path) -> None:
    _write(tmp_path / "agents/tools/one.py", TOOL_SOURCE)
    _write(tmp_path / "agents/tools/two.py", TOOL_SOURCE)
    with pytest.raises(DuplicateDefinitionError, match="search"):
        discover(folders=[tmp_path])


def test_a_definition_imported_into_another_module_counts_once(tmp_path: Path) -> None:
    _write(tmp_path / "agents/tools/search.py", TOOL_SOURCE)
    _write(tmp_path / "agents/tools/more.py", "from runtime.tools.registry import define_tool\n")
    assert list(discover(folders=[tmp_path]).tools) == ["search"]


def test_discover_from_a_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "shop_pkg"
    for sub in ("", "agents", "agents/tools"):
        _write(root / sub / "__init__.py", "")
    _write(root / "agents/tools/search.py", TOOL_SOURCE)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        registry = discover(packages=["shop_pkg", "package_without_agents_dir_xyz"])
    finally:
        for name in [n for n in sys.modules if n.startswith("shop_pkg")]:
            del sys.modules[name]
    assert list(registry.tools) == ["search"]


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("status.py", ("GET", "/status")),
        ("invoke.post.py", ("POST", "/invoke")),
        ("index.py", ("GET", "/")),
        ("files/[id].py", ("GET", "/files/{id}")),
        ("files/[*].DELETE.py", ("DELETE", "/files/{*}")),
    ],
)
def test_endpoint_routes_come_from_file_names(path: str, expected: tuple[str, str]) -> None:
    assert endpoint_route(path) == expected
