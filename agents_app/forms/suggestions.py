"""Names the studio suggests while typing (tool, prompt, agent, hook and handler names)."""

from __future__ import annotations

from dataclasses import dataclass

from agents_app.forms.fields import once_per_page
from agents_app.models import Agent, LanguageModel, Prompt
from agents_app.services.definitions import mcp_servers
from agents_app.services.definitions import rows as definitions
from runtime.core.spec import ModelDefinition
from runtime.providers.offers import provider_offers


@dataclass(frozen=True)
class Callable:
    """Something a prompt may offer the model as a tool."""

    name: str
    kind: str  # "code tool", "MCP tool (<server>)", "provider tool (<vendors>)", "prompt", "agent"
    description: str


def _short(text: str, length: int = 90) -> str:
    text = " ".join(text.split())
    return text if len(text) <= length else text[: length - 1] + "…"


def callables() -> list[Callable]:
    """Code tools, MCP servers' tools, prompts and agents with their descriptions, in that
    order (read once per page: ``fields.one_page``)."""
    result: list[Callable] = once_per_page(callables, _read_callables)
    return result


def _read_callables() -> list[Callable]:
    from agents_app.base.code_registry import get_registry

    code = definitions.registered_code_names()
    registered = get_registry().tools
    return (
        [
            Callable(n, "code tool", getattr(registered.get(n), "description", ""))
            for n in sorted(code[0] if code else ())
        ]
        + [
            Callable(name, f"MCP tool ({name[4:].split('/', 1)[0]})", desc)
            for name, desc in mcp_servers.tool_choices()
        ]
        + provider_callables()
        + [
            Callable(name, "prompt", desc)
            for name, desc in Prompt.objects.order_by("name").values_list(
                "name", "tool_description"
            )
        ]
        + [
            Callable(name, "agent", desc or about)
            for name, desc, about in Agent.objects.order_by("name").values_list(
                "name", "tool_description", "description"
            )
        ]
    )


def provider_callables() -> list[Callable]:
    """``provider:<name>`` tools the vendors of the stored models run, with who runs them
    (saving still checks every model of a prompt's chain)."""
    vendors: dict[str, list[str]] = {}
    about: dict[str, str] = {}
    providers = LanguageModel.objects.values_list("provider", flat=True).distinct()
    for provider in sorted(set(providers)):
        try:
            stub = ModelDefinition(name=provider, provider=provider, model="")  # type: ignore[arg-type]
        except ValueError:
            continue
        for name, offer in provider_offers(stub).items():
            vendors.setdefault(name, []).append(provider)
            about.setdefault(name, offer.description)
    return [
        Callable(f"provider:{name}", f"provider tool ({', '.join(vendors[name])})", about[name])
        for name in sorted(vendors)
    ]


def callable_names() -> list[tuple[str, str]]:
    """(name, label) for the pickers: the label says what it is and what it does."""
    return [
        (c.name, f"{c.kind}: {_short(c.description)}" if c.description else c.kind)
        for c in callables()
    ]


def handler_names() -> list[tuple[str, str]]:
    """(name, description) of the side handlers registered in code (``define_handler``)."""
    from agents_app.base.code_registry import get_registry

    handlers = sorted(get_registry().handlers.values(), key=lambda h: h.name)
    return [(h.name, _short(h.description)) for h in handlers]


def hook_names() -> list[str]:
    """Hook ids registered in code (empty when no code registry is loaded)."""
    code = definitions.registered_code_names()
    return sorted(code[1]) if code else []


def hooks_help(intro: str) -> str:
    names = hook_names()
    known = f" Registered hooks: {', '.join(names)}." if names else ""
    return f"{intro} Separate names with commas; they run in this order.{known}"
