"""Names the studio suggests while typing (tool, prompt, agent and hook names)."""

from __future__ import annotations

from agents_app.models import Agent, Prompt
from agents_app.services import definitions


def callable_names() -> list[tuple[str, str]]:
    """(name, what it is) for everything a prompt may call: code tools, prompts, agents."""
    code = definitions.registered_code_names()
    tools = sorted(code[0]) if code else []
    return (
        [(name, "code tool") for name in tools]
        + [(name, "prompt") for name in Prompt.objects.values_list("name", flat=True)]
        + [(name, "agent") for name in Agent.objects.values_list("name", flat=True)]
    )


def hook_names() -> list[str]:
    """Hook ids registered in code (empty when no code registry is loaded)."""
    code = definitions.registered_code_names()
    return sorted(code[1]) if code else []


def hooks_help(intro: str) -> str:
    names = hook_names()
    known = f" Registered hooks: {', '.join(names)}." if names else ""
    return f"{intro} Separate names with commas; they run in this order.{known}"
