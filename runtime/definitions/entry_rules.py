"""Options that would be accepted and then do nothing are refused when a definition is saved
(issue #38 items 3-5).

A prompt's tool entry carries the options of every kind of tool (``ToolConfig``); which ones
the engine reads depends on what the name resolves to. Each option below names the kinds that
honour it; given on another kind it is refused with the field and what to do instead. These
rules are called from ``runtime.definitions.validation`` (``validate_agent``/``validate_prompt``/
``validate_model``), so file import, the definition-write API and the studio forms refuse alike.
"""

from __future__ import annotations

from dataclasses import replace

from runtime.core.definition_errors import Catalog, DefinitionError
from runtime.core.spec import (
    PROVIDER_TOOL_PREFIX,
    SPEC_0_1,
    AgentDefinition,
    ModelDefinition,
    PromptDefinition,
    ResumableConfig,
    SideConfig,
    ToolConfig,
)

# What a tool entry's name can resolve to.
TOOL, MCP, PROVIDER, PROMPT = "tool", "mcp", "provider", "prompt"
SUBAGENT = "subagent"  # an agent entry with blocking or resumable
AGENT_TOOL = "agent"  # an exposeAsTool agent listed without blocking/resumable
HANDOFF = "handoff"  # an ai_human agent listed without exposeAsTool/blocking/resumable
NOTHING = "nothing"  # a dual_ai agent listed without exposeAsTool/blocking/resumable
PERSON_FIRST = "person_first"  # an agent with a person on side A (spec 0.2.0)
# ``Catalog.agent_shapes`` kind of an agent whose side A is a person (beside its ``type``s).
HUMAN_A = "human_a"

_WHAT = {
    TOOL: "a code tool",
    MCP: "an MCP tool",
    PROVIDER: "a provider tool",
    PROMPT: "a prompt (a sub-prompt)",
    SUBAGENT: "a subagent",
    AGENT_TOOL: "an agent used as a tool",
    HANDOFF: "an agent handed off to",
}
_AGENTS = frozenset({SUBAGENT, AGENT_TOOL})
_INCLUDE = frozenset({PROMPT})
# Entry option (camelCase, as written) → the kinds that read it (runtime.delegation.delegate,
# runtime.delegation.subagents, runtime.loop.session._hand_off, runtime.step.tool_half). ``optional`` and the wait
# options are left out: ``optional`` works on every kind, waits and ``options`` have their
# own rules (``runtime.definitions.validation._wait_rules``, ``provider_tool_errors``).
OPTION_KINDS: dict[str, frozenset[str]] = {
    "includeTextResponse": _INCLUDE,
    "includeToolCalls": _INCLUDE,
    "includeErrors": _INCLUDE,
    "initUserMessageProperty": frozenset({PROMPT, HANDOFF}) | _AGENTS,
    "initAttachmentsProperty": frozenset({PROMPT, HANDOFF}) | _AGENTS,
    "initAgentNameProperty": _AGENTS,
    "env": frozenset({TOOL, PROMPT}) | _AGENTS,
    "immediate": frozenset({SUBAGENT}),
    "blocking": _AGENTS | {SUBAGENT},
    "resumable": _AGENTS | {SUBAGENT},
    "scopedEnv": _AGENTS,
    "parentCommunication": frozenset({SUBAGENT}),
    "hidden": frozenset({SUBAGENT}),
}
_APPLIES = {
    "includeTextResponse": "sub-prompts",
    "includeToolCalls": "sub-prompts",
    "includeErrors": "sub-prompts",
    "initUserMessageProperty": "sub-prompts, agents and handoffs",
    "initAttachmentsProperty": "sub-prompts, agents and handoffs",
    "initAgentNameProperty": "agents (subagents and agents used as tools)",
    "env": "code tools, sub-prompts and agents (an MCP server takes its env values in its "
    "own headers/env as ${NAME})",
    "immediate": "subagents (an agent entry with blocking or resumable)",
    "blocking": "agents",
    "resumable": "agents",
    "scopedEnv": "agents",
    "parentCommunication": "subagents (an agent entry with blocking or resumable)",
    "hidden": "subagents (an agent entry with blocking or resumable)",
}


def entry_kind(entry: ToolConfig, catalog: Catalog) -> str | None:
    """What ``entry`` resolves to; None when the catalog cannot tell (code not loaded)."""
    name = entry.name
    if name.startswith(PROVIDER_TOOL_PREFIX):
        return PROVIDER
    if name.startswith(("mcp:", "a2a:", "knowledge:", "memory:")):  # a tool the host runs
        return MCP
    if name in catalog.tools:
        return TOOL
    if name in catalog.prompts:
        return PROMPT
    if name in catalog.agents:
        agent_type, exposed = catalog.agent_shapes.get(name, ("ai_human", False))
        if agent_type == HUMAN_A:
            return PERSON_FIRST
        if entry.blocking is not None or isinstance(entry.resumable, ResumableConfig):
            return SUBAGENT
        if exposed:
            return AGENT_TOOL
        return HANDOFF if agent_type == "ai_human" else NOTHING
    return None


def _given(entry: ToolConfig) -> list[str]:
    """The options the author set (defaults left out, as in an export)."""
    out = [key for key in entry.dump() if key != "name"]
    if entry.resumable is False:
        out = [key for key in out if key != "resumable"]  # ``false`` is the default's meaning
    return out


def tool_entry_option_errors(
    prompt: PromptDefinition, catalog: Catalog | None
) -> list[DefinitionError]:
    """Tool entries that resolve to nothing, and entry options their kind does not read."""
    if catalog is None:
        return []
    errs: list[DefinitionError] = []
    for i, raw in enumerate(prompt.tools or []):
        entry = ToolConfig(name=raw) if isinstance(raw, str) else raw
        kind = entry_kind(entry, catalog)
        if kind == PERSON_FIRST:
            errs.append(
                DefinitionError(
                    f"tools.{i}",
                    f"'{entry.name}' has a person on side A, who speaks first in its threads: "
                    "called as a tool or handed off to, it would wait for that person. Use an "
                    "agent whose side A is a prompt.",
                )
            )
            continue
        if kind == NOTHING:
            errs.append(
                DefinitionError(
                    f"tools.{i}",
                    f"'{entry.name}' is a dual_ai agent, which cannot take over a conversation: "
                    "list it with blocking or resumable (a subagent), or set exposeAsTool on it.",
                )
            )
            continue
        if kind is None or isinstance(raw, str):
            continue
        for option in _given(entry):
            kinds = OPTION_KINDS.get(option)
            if kinds is None or kind in kinds:
                continue
            errs.append(
                DefinitionError(
                    f"tools.{i}.{option}",
                    f"{option} does nothing on '{entry.name}', which is {_WHAT[kind]}: it "
                    f"applies to {_APPLIES[option]}. Remove it.",
                )
            )
    return errs


def _no_function_calling(model: str, catalog: Catalog) -> str | None:
    """The first model of ``model``'s chain whose capabilities say it cannot call tools."""
    chain = [model, *catalog.model_fallbacks.get(model, [])]
    return next((m for m in chain if catalog.model_function_calling.get(m) is False), None)


def model_function_calling_errors(
    model: ModelDefinition, catalog: Catalog | None
) -> list[DefinitionError]:
    """A model saved with ``functionCalling: false`` while prompts with tools run on it (or
    reach it as a fallback): their tools would silently stop being offered (issue #38 item 3,
    the model's side of the prompt's rule)."""
    if catalog is None or not model.capabilities or model.capabilities.tool_calls is not False:
        return []
    said = model.capabilities.tool_calls_name()
    users = sorted(
        name
        for name in catalog.prompts_with_tools
        if model.name
        in (
            catalog.prompt_models.get(name),
            *catalog.model_fallbacks.get(catalog.prompt_models.get(name, ""), []),
        )
    )
    if not users:
        return []
    return [
        DefinitionError(
            f"capabilities.{said}",
            f"Prompts {', '.join(repr(u) for u in users)} call tools on this model (or reach it "
            f"as a fallback); with {said}: false their tools would never be offered. "
            "Remove their tools or move them to another model first.",
        )
    ]


def function_calling_errors(
    prompt: PromptDefinition, catalog: Catalog | None
) -> list[DefinitionError]:
    """A prompt with tools on a model (or fallback) that says ``functionCalling: false``."""
    if catalog is None or not prompt.tools:
        return []
    culprit = _no_function_calling(prompt.model, catalog)
    if culprit is None:
        return []
    return [
        DefinitionError(
            "tools",
            f"Model '{culprit}' cannot call tools (its capabilities say functionCalling: "
            "false), so these tools would never be offered. Choose a model that can call "
            "tools, or remove the tools.",
        )
    ]


def _side_tool_names(side: SideConfig) -> list[str]:
    names = [side.stop_tool, side.end_session_tool]
    names += [b.name for b in side.session_tools().values()]
    return [n for n in names if n]


def agent_option_errors(agent: AgentDefinition, catalog: Catalog | None) -> list[DefinitionError]:
    """Agent settings its type never reads, and side tools its model cannot call."""
    errs = agent_hooks_errors(agent, catalog)
    # 0.1.0's rules; in 0.2.0 maxSessionTurns counts exchanges on every kind of agent and
    # side B is always there (a person or an AI).
    if agent.spec == SPEC_0_1 and agent.type == "ai_human":
        if agent.max_session_turns is not None:
            errs.append(
                DefinitionError(
                    "maxSessionTurns",
                    "maxSessionTurns applies only to dual_ai agents (an ai_human session ends "
                    "when the AI's turn ends); remove it, or use maxSteps on side A.",
                )
            )
        if agent.side_b is not None:
            errs.append(
                DefinitionError(
                    "sideB",
                    "Side B applies only to dual_ai agents (in an ai_human agent side B is the "
                    "person); remove it, or set type to dual_ai.",
                )
            )
    if catalog is None:
        return errs
    for key, side in agent.sides().items():
        model = catalog.prompt_models.get(side.prompt or "")
        names = _side_tool_names(side)
        culprit = _no_function_calling(model, catalog) if model and names else None
        if culprit is not None:
            errs.append(
                DefinitionError(
                    f"side{key.upper()}.prompt",
                    f"Model '{culprit}' of prompt '{side.prompt}' cannot call tools "
                    f"(functionCalling: false), so {', '.join(names)} would never be offered. "
                    "Choose a prompt on a model that can call tools, or remove those tools.",
                )
            )
    return errs


def prompts_run_by(side_prompts: list[str], catalog: Catalog) -> list[str]:
    """The prompts an agent runs: its sides' prompts and, through their tool entries, every
    sub-prompt below them (each once, in the order reached)."""
    seen: list[str] = []
    todo = list(side_prompts)
    while todo:
        name = todo.pop(0)
        if name in seen or name not in catalog.prompts:
            continue
        seen.append(name)
        todo += [t for t in catalog.prompt_tools.get(name, []) if t in catalog.prompts]
    return seen


def _silenced(hooks: list[str], sides: list[str], catalog: Catalog) -> list[str] | None:
    """The prompts an agent runs when every one lists hooks of its own (so the agent's
    ``hooks`` would never run), else None."""
    if not hooks:
        return None
    run = prompts_run_by(sides, catalog)
    if not run or not all(catalog.prompt_hooks.get(p) for p in run):
        return None
    return run


def agent_hooks_errors(agent: AgentDefinition, catalog: Catalog | None) -> list[DefinitionError]:
    """Agent ``hooks`` that would never run. The reference runs "the active prompt's hooks list
    (the agent's hooks list only when the prompt declares none)", sub-prompts included: honoured
    so (``runtime.tools.hooks.hook_ids``); refused when every prompt the agent runs lists its own, as
    the agent's hooks would then be accepted and silently ignored (issue #38 item 5)."""
    if catalog is None:
        return []
    sides = agent.side_prompts()
    silenced = _silenced(list(agent.hooks or []), sides, catalog)
    if silenced is None:
        return []
    return [
        DefinitionError(
            "hooks",
            "These hooks would never run: an agent's hooks run only for prompts that list no "
            "hooks of their own (a prompt's hooks replace its agent's), and every prompt this "
            f"agent runs lists its own ({', '.join(repr(p) for p in silenced)}). Add them to "
            "those prompts' hooks lists instead, or remove them here.",
        )
    ]


def prompt_hooks_errors(prompt: PromptDefinition, catalog: Catalog | None) -> list[DefinitionError]:
    """The same rule from the prompt's side: hooks on a prompt that leave an agent with hooks no
    prompt listing none, so the agent's hooks would stop running altogether."""
    if not prompt.hooks or catalog is None:
        return []
    hooks = {**catalog.prompt_hooks, prompt.name: list(prompt.hooks)}
    seen = replace(catalog, prompt_hooks=hooks)
    agents = [
        name
        for name, (agent_hooks, sides) in sorted(catalog.agent_hooks.items())
        if prompt.name in prompts_run_by(sides, seen) and _silenced(agent_hooks, sides, seen)
    ]
    if not agents:
        return []
    which = ", ".join(repr(a) for a in agents)
    return [
        DefinitionError(
            "hooks",
            f"With these hooks every prompt of agent {which} lists its own, so that agent's "
            "hooks would never run (a prompt's hooks replace its agent's). Add the agent's hooks "
            "to this list and remove them from the agent, or leave this list empty.",
        )
    ]


def model_option_errors(model: ModelDefinition) -> list[DefinitionError]:
    """Model settings its provider never reads."""
    if model.included_providers and model.provider != "openrouter":
        return [
            DefinitionError(
                "includedProviders",
                "includedProviders applies only to OpenRouter models (it picks OpenRouter's "
                "upstream providers); remove it.",
            )
        ]
    return []


# Reasoning options a provider's request builder never reads (runtime.providers.*): OpenAI
# takes an effort only, and neither OpenAI nor Google keeps anything for ``include``.
_REASONING_IGNORED = {
    "maxTokens": frozenset({"openai"}),
    "include": frozenset({"openai", "google"}),
}
_REASONING_INSTEAD = {
    "maxTokens": "use reasoning.effort, or remove it",
    "include": "remove it (Anthropic and OpenRouter models keep reasoning in the history)",
}


def reasoning_option_errors(
    prompt: PromptDefinition, catalog: Catalog | None
) -> list[DefinitionError]:
    """``reasoning`` options the prompt's model (or a fallback) would silently drop."""
    if catalog is None or prompt.reasoning is None:
        return []
    given = prompt.reasoning.dump()
    chain = [prompt.model, *catalog.model_fallbacks.get(prompt.model, [])]
    errs: list[DefinitionError] = []
    for option, providers in _REASONING_IGNORED.items():
        if option not in given:
            continue
        culprit = next((m for m in chain if catalog.model_providers.get(m) in providers), None)
        if culprit is None:
            continue
        provider = catalog.model_providers[culprit]
        errs.append(
            DefinitionError(
                f"reasoning.{option}",
                f"reasoning.{option} does nothing on model '{culprit}' ({provider} does not "
                f"read it); {_REASONING_INSTEAD[option]}.",
            )
        )
    return errs


def _chain_levels(model: str, catalog: Catalog) -> list[tuple[str, list[str]]]:
    """The models of ``model``'s chain that declare ``reasoningLevels``, with their efforts."""
    chain = [model, *catalog.model_fallbacks.get(model, [])]
    levels = catalog.model_reasoning_levels
    return [(m, found) for m in chain if (found := levels.get(m)) is not None]


def _level_error(model: str, levels: list[str], effort: str | None) -> str | None:
    if not levels:
        return (
            f"Model '{model}' does not reason (its reasoningLevels offer none); remove the "
            "reasoning settings or choose another model."
        )
    if effort is not None and effort not in levels:
        return (
            f"Model '{model}' offers the reasoning efforts {', '.join(levels)} (its "
            f"reasoningLevels); '{effort}' is not one of them."
        )
    return None


def reasoning_level_errors(
    prompt: PromptDefinition, catalog: Catalog | None
) -> list[DefinitionError]:
    """A prompt's reasoning that a model of its chain says it cannot do (``reasoningLevels``)."""
    if catalog is None or prompt.reasoning is None:
        return []
    given = prompt.reasoning.dump()
    if not given.keys() & {"effort", "maxTokens"}:
        return []
    path = "reasoning.effort" if "effort" in given else "reasoning"
    errs = []
    for model, levels in _chain_levels(prompt.model, catalog):
        message = _level_error(model, levels, prompt.reasoning.effort)
        if message:
            errs.append(DefinitionError(path, message))
    return errs


def model_reasoning_level_errors(
    model: ModelDefinition, catalog: Catalog | None
) -> list[DefinitionError]:
    """The model's side of the rule: ``reasoningLevels`` that leave out what stored prompts on
    it (or reaching it as a fallback) ask for."""
    levels = model.capabilities.effort_names() if model.capabilities else None
    if catalog is None or levels is None:
        return []
    users = []
    for prompt, effort in sorted(catalog.prompt_reasoning.items()):
        chain = catalog.prompt_models.get(prompt, "")
        if model.name not in (chain, *catalog.model_fallbacks.get(chain, [])):
            continue
        if _level_error(model.name, levels, effort or None) is not None:
            users.append(prompt)
    if not users:
        return []
    return [
        DefinitionError(
            "capabilities.reasoningLevels",
            f"Prompts {', '.join(repr(u) for u in users)} ask this model for reasoning these "
            f"levels leave out (offered: {', '.join(levels) or 'none'}). Change their reasoning "
            "or move them to another model first.",
        )
    ]
