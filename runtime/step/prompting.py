"""Rendering a prompt definition into the system prompt text.

Parts are concatenated: text as is; ``include`` renders another prompt
(recursively; a missing one renders ``[Prompt not found: name]``, a cycle
renders nothing more than once); ``env`` is replaced by the env value, or
nothing when it does not resolve. Plain string prompts are used verbatim.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from runtime.core.spec import PromptDefinition, PromptEnvPart, PromptIncludePart

logger = logging.getLogger("runtime.step.prompting")
PromptLoader = Callable[[str], Awaitable[PromptDefinition | None]]
EnvLookup = Callable[[str], Awaitable[str | None]]


async def render_prompt(
    prompt: PromptDefinition,
    load_prompt: PromptLoader,
    env: EnvLookup,
    _stack: tuple[str, ...] = (),
) -> str:
    """The system prompt text of ``prompt``."""
    if isinstance(prompt.prompt, str):
        return prompt.prompt
    stack = (*_stack, prompt.name)
    pieces: list[str] = []
    for part in prompt.prompt:
        if isinstance(part, PromptIncludePart):
            pieces.append(await _include(part.prompt, load_prompt, env, stack))
        elif isinstance(part, PromptEnvPart):
            pieces.append(await env(part.property) or "")
        else:
            pieces.append(part.content)
    return "".join(pieces)


async def _include(
    name: str, load_prompt: PromptLoader, env: EnvLookup, stack: tuple[str, ...]
) -> str:
    if name in stack:
        logger.warning(
            "Prompt include cycle %s; the repeated include renders empty",
            " → ".join((*stack, name)),
        )
        return ""
    included = await load_prompt(name)
    if included is None:
        return f"[Prompt not found: {name}]"
    return await render_prompt(included, load_prompt, env, stack)
