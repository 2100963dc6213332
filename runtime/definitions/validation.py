"""Definition validation in one place (spec §9 plus cross-references).

Used by the admin studio, the HTTP API, file import and the engine alike. Every
rule returns ``DefinitionError``s with a spec-style field path (``sideA.prompt``)
and a sentence a non-developer understands; nothing here raises on bad input.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel
from pydantic.alias_generators import to_camel

from runtime.core import a2a_agents
from runtime.core.definition_errors import Catalog, DefinitionError, check_name, parse
from runtime.core.env_refs import LITERAL_CREDENTIAL, literal_credential
from runtime.core.provider_tools import ProviderToolOffer
from runtime.core.spec import (
    PROVIDER_TOOL_PREFIX,
    SPEC_0_1,
    SPEC_0_2,
    AgentDefinition,
    ModelDefinition,
    PromptDefinition,
    PromptEnvPart,
    PromptIncludePart,
    SideConfig,
)
from runtime.core.tool_names import validate_tool_name
from runtime.definitions.entry_rules import (
    agent_option_errors,
    function_calling_errors,
    model_function_calling_errors,
    model_option_errors,
    model_reasoning_level_errors,
    prompt_hooks_errors,
    reasoning_level_errors,
    reasoning_option_errors,
    tool_entry_option_errors,
)
from runtime.definitions.parent_hooks import parent_hook_errors
from runtime.definitions.side_subagents import old_subagent_entry_errors, side_subagent_errors
from runtime.knowledge import memory_names
from runtime.knowledge import names as knowledge_names
from runtime.knowledge import retrieval as knowledge_retrieval
from runtime.mcp.servers import reference_errors
from runtime.providers.offers import option_errors, provider_offers
from runtime.providers.openai.offers import is_search_model
from runtime.providers.registry import known_providers

MAX_PRICE = 1_000_000
# Text limits mirror the database columns (agents_app.models), so that a definition that
# validates also saves on PostgreSQL, which refuses longer values instead of truncating.
ENV_KEY_MAX = 128
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
    # spec 0.2.0: observational, beside the events of the same names
    "tool_call_started",
    "tool_call_done",
)


# --- rules ------------------------------------------------------------------


def _tool_name_rule(path: str, name: str | None, lead: str = "") -> list[DefinitionError]:
    """validateToolName for a name this definition offers to a model (runtime.core.tool_names)."""
    problem = validate_tool_name(name) if name else None
    return [DefinitionError(path, lead + problem)] if problem else []


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


def _too_long(fields: Iterable[tuple[str, str | None, int]]) -> list[DefinitionError]:
    """(path, value, limit) → an error for each value longer than its database column."""
    return [
        DefinitionError(path, f"At most {limit} characters (this one has {len(value)}).")
        for path, value, limit in fields
        if value is not None and len(value) > limit
    ]


def _env_key_lengths(path: str, env: Mapping[str, Any] | None) -> list[DefinitionError]:
    return _too_long((f"{path}.{key}", key, ENV_KEY_MAX) for key in env or {})


def _side_rules(
    side: SideConfig, key: str, label: str, catalog: Catalog | None
) -> list[DefinitionError]:
    errs: list[DefinitionError] = _too_long(
        [
            (f"{key}.label", side.label, 100),
            (f"{key}.stopTool", side.stop_tool, 200),
            (f"{key}.stopToolResponseProperty", side.stop_tool_response_property, 128),
            (f"{key}.endSessionTool", side.end_session_tool, 200),
        ]
    )
    if not (side.prompt or "").strip():
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
    errs += _positive(side.max_turns, f"{key}.maxTurns", "Max turns")
    errs += _session_tool_rules(side, key)
    for attr, prop in (("stop_tool", "stopTool"), ("end_session_tool", "endSessionTool")):
        errs += _tool_name_rule(f"{key}.{prop}", getattr(side, attr))
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


def _session_tool_rules(side: SideConfig, key: str) -> list[DefinitionError]:
    """Session tools need a name, distinct per side; a tool no code defines is built in."""
    errs: list[DefinitionError] = []
    seen: dict[str, str] = {}
    for kind, binding in side.session_tools().items():
        prop = to_camel(kind)
        path = f"{key}.{prop}"
        errs += _too_long(
            [
                (f"{path}.name", binding.name, 200),
                (f"{path}.messageProperty", binding.message_property, 128),
                (f"{path}.attachmentsProperty", binding.attachments_property, 128),
            ]
        )
        if not binding.name.strip():
            errs.append(DefinitionError(f"{path}.name", "A session tool needs a name."))
        elif binding.name in seen:
            errs.append(
                DefinitionError(
                    f"{path}.name", f"'{binding.name}' is already this side's {seen[binding.name]}."
                )
            )
        seen[binding.name] = prop
        if binding.message_property and binding.message_property == binding.attachments_property:
            errs.append(
                DefinitionError(
                    f"{path}.attachmentsProperty",
                    "The attachments property must differ from the message property.",
                )
            )
    return errs


def _generation_rules(agent: AgentDefinition) -> list[DefinitionError]:
    """One spec generation per definition; 0.2.0 names both sides."""
    if agent.mixed_keys:
        keys = ", ".join(agent.mixed_keys)
        return [
            DefinitionError(
                "type",
                f"type is spec 0.1.0's way to say who is on each side, and {keys} belong to "
                "spec 0.2.0: write the agent in one of them (0.2.0: remove type and back each "
                f"side with a prompt or human: true; 0.1.0: remove {keys}).",
            )
        ]
    if agent.spec == SPEC_0_2 and agent.side_b is None:
        return [
            DefinitionError(
                "sideB",
                'Side B is required in spec 0.2.0: {"human": true} for a person, or '
                '{"prompt": "…"} for a second AI.',
            )
        ]
    return []


def _backing_rules(
    side: SideConfig, key: str, label: str, catalog: Catalog | None
) -> list[DefinitionError]:
    """Exactly one backing; a person's or a handler's side takes only a label."""
    named = [
        what
        for what, given in (
            ("prompt", side.prompt is not None),
            ("human: true", side.human is True),
            ("handler", side.handler is not None),
        )
        if given
    ]
    errs: list[DefinitionError] = []
    if len(named) > 1:
        errs.append(
            DefinitionError(
                key,
                f"{label} is backed by exactly one of prompt, human: true or handler; it names "
                f"{' and '.join(named)}.",
            )
        )
    if side.handler is not None:
        errs += _handler_rules(side.handler, key, catalog)
    if side.human or side.handler is not None:
        who = "a person's side (a person" if side.human else "a handler's side (code"
        errs += [
            DefinitionError(
                f"{key}.{prop}",
                f"{prop} does nothing on {who} takes no model steps); remove it.",
            )
            for prop in side.dump()
            if prop not in ("human", "label", "prompt", "handler")
        ]
        errs += _too_long([(f"{key}.label", side.label, 100)])
    return errs


def _handler_rules(name: str, key: str, catalog: Catalog | None) -> list[DefinitionError]:
    """A handler side names a handler this instance has (``define_handler`` in
    ``agents/handlers/``); unchecked when the code is not loaded (``strict_code_names``)."""
    if not name.strip():
        return [DefinitionError(f"{key}.handler", "Handler needs the name of a side handler.")]
    if catalog is None or not catalog.strict_code_names or name in catalog.handlers:
        return []
    known = ", ".join(sorted(catalog.handlers)) or "none"
    return [
        DefinitionError(
            f"{key}.handler",
            f"No side handler named '{name}' is registered (define it with define_handler in "
            f"agents/handlers/; registered: {known}).",
        )
    ]


def _sides_rules(agent: AgentDefinition, catalog: Catalog | None) -> list[DefinitionError]:
    errs: list[DefinitionError] = []
    for key, label, side in (("sideA", "Side A", agent.side_a), ("sideB", "Side B", agent.side_b)):
        if side is None:
            continue
        errs += _backing_rules(side, key, label, catalog)
        # A side B given to an ai_human agent (0.1.0) is still stored, so its prompt must
        # exist too.
        if not side.human and side.handler is None:
            errs += _side_rules(side, key, label, catalog)
    if agent.spec == SPEC_0_1 and agent.type == "dual_ai" and agent.side_b is None:
        errs.append(DefinitionError("sideB", "A dual_ai agent needs a side B with a prompt."))
    if agent.side_a.human and agent.side_b is not None and agent.side_b.human:
        errs.append(
            DefinitionError(
                "sideB", "Both sides are people: back at least one side with a prompt (the AI)."
            )
        )
    return errs


def validate_agent(agent: AgentDefinition, catalog: Catalog | None = None) -> list[DefinitionError]:
    """Spec §9 for agents; with a catalog, also that referenced prompts and tools exist."""
    errs = check_name(agent.name)
    shape = _generation_rules(agent)
    if shape:
        return errs + shape
    errs += _sides_rules(agent, catalog)
    if agent.expose_as_tool and not (agent.tool_description or "").strip():
        errs.append(
            DefinitionError(
                "toolDescription",
                "An agent exposed as a tool needs a tool description: the model reads it "
                "to decide when to call the agent.",
            )
        )
    # Above the hard cap is accepted and capped by the runtime (the AgentBuilder agents API:
    # "Hard maximum: 250 turns regardless of this setting"), so it is not refused here.
    errs += _positive(agent.max_session_turns, "maxSessionTurns", "Max session turns")
    errs += check_icon(agent.icon)
    errs += _too_long([("title", agent.title, 200), ("icon", agent.icon, 500)])
    errs += _env_key_lengths(agent.env_key, agent.env)
    errs += _one_env(agent.env, agent.tenvs)
    errs += _too_long(
        [
            ("packageName", agent.package_name, 214),
            ("version", agent.version, 64),
            ("author", agent.author, 200),
            ("license", agent.license, 100),
        ]
    )
    if agent.expose_as_tool:
        errs += _tool_name_rule("name", agent.name, "An agent exposed as a tool: ")
    if agent.expose_as_tool and agent.human_side() == "a":
        errs.append(
            DefinitionError(
                "exposeAsTool",
                "An agent with a person on side A cannot be called as a tool: its threads wait "
                "for that person to write first. Remove exposeAsTool.",
            )
        )
    errs += _hook_rules(agent.hooks, catalog)
    errs += agent_option_errors(agent, catalog)
    errs += side_subagent_errors(agent, catalog)
    errs += parent_hook_errors(agent, catalog)
    return errs


def _one_env(env: Any, tenvs: Any) -> list[DefinitionError]:
    if env is not None and tenvs is not None:
        return [
            DefinitionError("tenvs", "tenvs is the old name of env; give one of them, not both.")
        ]
    return []


def _hook_rules(hooks: list[str] | None, catalog: Catalog | None) -> list[DefinitionError]:
    if not hooks or catalog is None or not catalog.strict_code_names:
        return []
    errs = [
        DefinitionError(f"hooks.{i}", f"Hook '{h}' is not registered.")
        for i, h in enumerate(hooks)
        if h not in catalog.hooks
    ]
    return errs + [
        DefinitionError(
            f"hooks.{i}",
            f"Hook '{h}' is a user hook: it runs in a person's scope whenever its event "
            "happens, so a prompt or agent cannot list it; remove it from hooks.",
        )
        for i, h in enumerate(hooks)
        if h in catalog.user_hooks
    ]


def _mcp_rules(prompt: PromptDefinition, catalog: Catalog) -> list[DefinitionError]:
    if catalog.mcp_tools is None:
        return []
    errs: list[DefinitionError] = []
    for i, name in enumerate(prompt.tool_names()):
        if name.startswith("mcp:"):
            errs += reference_errors(f"tools.{i}", name, catalog.mcp_tools)
    return errs


def _a2a_rules(prompt: PromptDefinition, catalog: Catalog) -> list[DefinitionError]:
    if catalog.a2a_agents is None:
        return []
    errs: list[DefinitionError] = []
    for i, name in enumerate(prompt.tool_names()):
        if name.startswith(a2a_agents.PREFIX):
            errs += a2a_agents.reference_errors(f"tools.{i}", name, catalog.a2a_agents)
    return errs


def _knowledge_rules(prompt: PromptDefinition, catalog: Catalog) -> list[DefinitionError]:
    if catalog.knowledge_bases is None:
        return []
    errs: list[DefinitionError] = []
    for i, name in enumerate(prompt.tool_names()):
        if name.startswith(knowledge_names.PREFIX):
            errs += knowledge_names.reference_errors(f"tools.{i}", name, catalog.knowledge_bases)
    return errs


def _memory_rules(prompt: PromptDefinition) -> list[DefinitionError]:
    errs: list[DefinitionError] = []
    for i, name in enumerate(prompt.tool_names()):
        if memory_names.is_memory_entry(name):
            errs += memory_names.reference_errors(f"tools.{i}", name)
    return errs


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
        errs += _mcp_rules(prompt, catalog)
        errs += _a2a_rules(prompt, catalog)
        errs += _knowledge_rules(prompt, catalog)
        if catalog.strict_code_names:
            known = catalog.callables()
            for i, name in enumerate(prompt.tool_names()):
                if name not in known and not name.startswith(
                    (
                        PROVIDER_TOOL_PREFIX,
                        "mcp:",
                        "a2a:",
                        knowledge_names.PREFIX,
                        memory_names.PREFIX,
                    )
                ):
                    errs.append(
                        DefinitionError(
                            f"tools.{i}", f"'{name}' is not a known tool, prompt or agent."
                        )
                    )
    for i, name in enumerate(prompt.tool_names()):
        if not name.startswith(
            ("provider:", "mcp:", "a2a:", knowledge_names.PREFIX, memory_names.PREFIX)
        ):  # mapped
            errs += _tool_name_rule(f"tools.{i}", name)
    errs += _memory_rules(prompt)
    errs += _hook_rules(prompt.hooks, catalog)
    errs += prompt_hooks_errors(prompt, catalog)
    errs += old_subagent_entry_errors(prompt)
    errs += _prompt_lengths(prompt)
    errs += tool_env_credential_errors(prompt)
    errs += provider_tool_errors(prompt, catalog)
    errs += response_schema_errors(prompt, catalog)
    errs += _wait_rules(prompt, catalog)
    errs += tool_entry_option_errors(prompt, catalog)
    errs += function_calling_errors(prompt, catalog)
    errs += reasoning_option_errors(prompt, catalog)
    errs += reasoning_level_errors(prompt, catalog)
    errs += _variable_rules(prompt)
    errs += _one_env(prompt.env, prompt.tenvs)
    if prompt.expose_as_tool is False:
        errs.append(
            DefinitionError(
                "exposeAsTool",
                "Every prompt can be called as a tool by naming it in another prompt's tools, "
                "so exposeAsTool: false would change nothing; remove it.",
            )
        )
    if (
        prompt.required_schema is not None
        and prompt.required_schema.get("type", "object") != "object"
    ):
        errs.append(
            DefinitionError("requiredSchema", "The required schema must describe an object.")
        )
    return errs


def _variable_rules(prompt: PromptDefinition) -> list[DefinitionError]:
    errs: list[DefinitionError] = []
    seen: set[str] = set()
    for i, variable in enumerate(prompt.variables or []):
        path = f"variables.{i}.name"
        if not variable.name.strip():
            errs.append(DefinitionError(path, "A variable needs a name."))
        elif variable.name in seen:
            errs.append(DefinitionError(path, f"'{variable.name}' is declared twice."))
        seen.add(variable.name)
        errs += _too_long([(path, variable.name, ENV_KEY_MAX)])
    return errs


def _model_chain(prompt: PromptDefinition, catalog: Catalog | None) -> list[str]:
    """The prompt's model, then its fallbacks (the models that may answer it)."""
    if catalog is None:
        return [prompt.model]
    chain = [prompt.model]
    for name in catalog.model_fallbacks.get(prompt.model, []):
        if name not in chain:
            chain.append(name)
    return chain


def provider_tool_errors(
    prompt: PromptDefinition, catalog: Catalog | None = None
) -> list[DefinitionError]:
    """``provider:<name>`` tools some model of the chain does not run, and options that do
    not fit the tool.

    Refused rather than dropped at run time: an agent that was told it can search the
    web must not silently lose that tool, on its model or on a fallback of another vendor.
    """
    errs: list[DefinitionError] = []
    for i, entry in enumerate(prompt.tools or []):
        name = entry if isinstance(entry, str) else entry.name
        options = None if isinstance(entry, str) else entry.options
        if name.startswith(knowledge_names.PREFIX) and options is not None:
            errs += knowledge_retrieval.option_errors(f"tools.{i}.options", name, options)
            continue  # retrieval before each turn (docs/knowledge.md)
        if not name.startswith(PROVIDER_TOOL_PREFIX):
            if options is not None:
                errs.append(
                    DefinitionError(
                        f"tools.{i}.options",
                        f"Options apply only to provider tools (provider:NAME) and knowledge "
                        f"bases (knowledge:NAME); '{name}' is neither.",
                    )
                )
            continue
        if catalog is None:
            continue  # checked with the other references, once the models are known
        tool = name[len(PROVIDER_TOOL_PREFIX) :]
        chain = [m for m in _model_chain(prompt, catalog) if m in catalog.model_providers]
        for model_name in chain:
            offers = _offers_of(model_name, catalog)
            offer = offers.get(tool)
            if offer is None:
                provider = catalog.model_providers[model_name]
                what = ", ".join(f"provider:{t}" for t in offers) or "none"
                errs.append(
                    DefinitionError(
                        f"tools.{i}",
                        f"'{name}' is not offered by provider '{provider}' for model "
                        f"'{model_name}'. Provider tools it offers: {what}. Remove it or "
                        "choose another model.",
                    )
                )
                continue
            for problem in option_errors(offer, options or {}):
                errs.append(
                    DefinitionError(f"tools.{i}.options", f"Options of '{name}': {problem}")
                )
    return _unique(errs)


def _offers_of(model_name: str, catalog: Catalog) -> dict[str, ProviderToolOffer]:
    offers = catalog.model_offers.get(model_name)
    if offers is not None:
        return offers
    provider = catalog.model_providers[model_name]
    stub = ModelDefinition(name=model_name, provider=provider, model="")  # type: ignore[arg-type]
    return provider_offers(stub)


def _unique(errs: list[DefinitionError]) -> list[DefinitionError]:
    """Each error once (two models of one vendor refuse a tool in the same words)."""
    seen: set[tuple[str, str]] = set()
    out = []
    for e in errs:
        if (e.path, e.message) not in seen:
            seen.add((e.path, e.message))
            out.append(e)
    return out


def response_schema_errors(
    prompt: PromptDefinition, catalog: Catalog | None = None
) -> list[DefinitionError]:
    """A response schema must be a valid JSON Schema object and every model of the chain
    must be able to answer in structured output (its capabilities do not say it cannot)."""
    schema = prompt.response_schema
    if schema is None:
        return []
    errs: list[DefinitionError] = []
    # On use: only a prompt with a schema needs jsonschema (runtime.tools.toolset says why).
    from jsonschema import SchemaError
    from jsonschema.validators import validator_for

    try:
        validator_for(schema).check_schema(schema)
    except SchemaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path)
        at = f" (at {where})" if where else ""
        errs.append(
            DefinitionError(
                "responseSchema",
                f"The response schema is not a valid JSON Schema{at}: {exc.message}",
            )
        )
    if schema.get("type") != "object":
        errs.append(
            DefinitionError(
                "responseSchema",
                'The response schema must describe an object ("type": "object"): vendors '
                "only take an object as the answer's schema.",
            )
        )
    if catalog is not None:
        for name in _model_chain(prompt, catalog):
            if catalog.model_structured_outputs.get(name) is False:
                provider = catalog.model_providers.get(name, "?")
                errs.append(
                    DefinitionError(
                        "responseSchema",
                        f"Model '{name}' (provider '{provider}') cannot answer with structured "
                        "output: its capabilities say structured outputs are not supported. "
                        "Choose another model or remove the response schema.",
                    )
                )
    return errs


def _wait_rules(prompt: PromptDefinition, catalog: Catalog | None) -> list[DefinitionError]:
    """``requiresApproval`` / ``client`` / ``waitTimeoutSeconds`` only where they can work:
    on a tool the engine runs (code or MCP), one way of waiting at a time, and a timeout
    only on an entry that waits."""
    errs: list[DefinitionError] = []
    for i, entry in enumerate(prompt.tools or []):
        if isinstance(entry, str):
            continue
        path, name = f"tools.{i}", entry.name
        marks = [
            m
            for m, on in (("requiresApproval", entry.requires_approval), ("client", entry.client))
            if on
        ]
        if len(marks) > 1:
            errs.append(DefinitionError(path, "Use requiresApproval or client, not both."))
        if entry.wait_timeout_seconds is not None:
            if not marks:
                errs.append(
                    DefinitionError(
                        f"{path}.waitTimeoutSeconds",
                        "waitTimeoutSeconds applies only with requiresApproval or client.",
                    )
                )
            errs += _positive(entry.wait_timeout_seconds, f"{path}.waitTimeoutSeconds", "The wait")
        if not marks:
            continue
        what = None
        if name.startswith("provider:"):
            what = "a provider tool (it runs at the model's vendor)"
        elif (
            catalog is not None
            and name not in catalog.tools
            and not name.startswith(("mcp:", "a2a:", knowledge_names.PREFIX, memory_names.PREFIX))
        ):
            if name in catalog.agents:
                what = "an agent"
            elif name in catalog.prompts:
                what = "a prompt"
        if entry.client and name.startswith(("mcp:", "a2a:")):
            what = "an MCP tool (the server runs it, not the client)"
        if what is not None:
            errs.append(
                DefinitionError(path, f"{marks[0]} works only on tools; '{name}' is {what}.")
            )
    return errs


def tool_env_credential_errors(prompt: PromptDefinition) -> list[DefinitionError]:
    """A tool entry's ``env`` may not hold a credential in clear (MCP headers' rule,
    ``runtime.core.env_refs``): the prompt is shown, versioned and exported as written."""
    errs = []
    for i, entry in enumerate(prompt.tools or []):
        if isinstance(entry, str):
            continue
        names = [key for key, value in (entry.env or {}).items() if literal_credential(key, value)]
        if names:
            holds = (
                f"{names[0]} holds a credential"
                if len(names) == 1
                else (f"{', '.join(names[:-1])} and {names[-1]} hold credentials")
            )
            errs.append(
                DefinitionError(
                    f"tools.{i}.env",
                    f"{holds} in clear, which the studio, the API and exports would show. "
                    f"{LITERAL_CREDENTIAL}",
                )
            )
    return errs


def _prompt_lengths(prompt: PromptDefinition) -> list[DefinitionError]:
    fields: list[tuple[str, str | None, int]] = []
    for i, part in enumerate(prompt.prompt if isinstance(prompt.prompt, list) else []):
        if isinstance(part, PromptEnvPart):
            fields.append((f"prompt.{i}.property", part.property, ENV_KEY_MAX))
    for i, entry in enumerate(prompt.tools or []):
        if isinstance(entry, str):
            fields.append((f"tools.{i}", entry, 200))
            continue
        fields += [
            (f"tools.{i}.name", entry.name, 200),
            (f"tools.{i}.initUserMessageProperty", entry.init_user_message_property, 128),
            (f"tools.{i}.initAttachmentsProperty", entry.init_attachments_property, 128),
            (f"tools.{i}.initAgentNameProperty", entry.init_agent_name_property, 128),
            (f"tools.{i}.optional", entry.optional, 128),
        ]
    return _too_long(fields) + _env_key_lengths("env", prompt.env)


def validate_model(model: ModelDefinition, catalog: Catalog | None = None) -> list[DefinitionError]:
    errs = check_name(model.name)
    errs += _too_long([("model", model.model, 200), ("baseUrl", model.base_url, 200)])
    known = known_providers()
    if model.provider not in known:
        listed = ", ".join(f"'{p}'" for p in known[:-1]) + f" or '{known[-1]}'"
        errs.append(DefinitionError("provider", f"Provider must be one of: {listed}."))
    if not model.model.strip():
        errs.append(DefinitionError("model", "The provider's model id is required."))
    if (model.script or model.streaming) and model.provider != "test":
        errs.append(
            DefinitionError("script", "Only models of the 'test' provider can have a script.")
        )
    for prop, price in (
        ("inputPrice", model.input_price),
        ("outputPrice", model.output_price),
        ("cachedPrice", model.cached_price),
    ):
        # The price columns hold 12 digits, 6 after the point (USD per million tokens).
        if price is not None and price >= MAX_PRICE:
            errs.append(
                DefinitionError(prop, f"Prices must be below {MAX_PRICE:,} USD per million tokens.")
            )
    errs += base_url_errors(model.base_url)
    errs += _capability_rules(model)
    errs += model_reasoning_level_errors(model, catalog)
    errs += _model_api_rules(model)
    errs += model_option_errors(model)
    errs += model_function_calling_errors(model, catalog)
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


def _capability_rules(model: ModelDefinition) -> list[DefinitionError]:
    caps = model.capabilities
    if caps is None:
        return []
    errs: list[DefinitionError] = []
    if caps.supports_streaming is False and model.streaming is not None:
        errs.append(
            DefinitionError(
                "streaming",
                "This model says supportsStreaming: false, so its replies come in one piece "
                "and a streaming simulation would never run; remove one of them.",
            )
        )
    limit, output = caps.max_context_tokens, caps.max_output_tokens
    if limit is not None and output is not None and output > limit:
        errs.append(
            DefinitionError(
                "capabilities.maxOutputTokens",
                f"maxOutputTokens ({output}) cannot be more than maxContextTokens ({limit}): "
                "the reply is part of the context.",
            )
        )
    return errs


# What a URL never holds unencoded (RFC 3986) and a shell or a header reads as syntax:
# whitespace and control characters, quotes, ``$`` and backticks, backslashes, braces.
_URL_UNSAFE = re.compile(r"[\x00-\x20\x7f-\x9f\u2028\u2029$`'\"\\{}<>|^]|\s")


def base_url_errors(url: str | None, path: str = "baseUrl") -> list[DefinitionError]:
    """A model's base URL must be a plain http(s) URL with a host: it is joined to the
    vendor's paths, receives the key, and is pasted into shells ("Copy as cURL")."""
    if not url:
        return []
    bad = _URL_UNSAFE.search(url)
    if bad is not None:
        shown = repr(bad.group()) if bad.group().isprintable() else f"U+{ord(bad.group()):04X}"
        return [
            DefinitionError(
                path,
                f"The base URL cannot contain {shown} (spaces, quotes, $, backticks, "
                "backslashes, braces or control characters): write a plain URL such as "
                "https://api.example.com/v1.",
            )
        ]
    if not url.startswith(("http://", "https://")):
        return [DefinitionError(path, "The base URL must start with http:// or https://.")]
    parts = urlsplit(url)
    try:
        parts.port  # noqa: B018  (raises for a port that is not a number below 65536)
    except ValueError:
        return [DefinitionError(path, "The base URL has an invalid port.")]
    if not parts.hostname:
        return [
            DefinitionError(path, "The base URL needs a host, as in https://api.example.com/v1.")
        ]
    if parts.username is not None or parts.password is not None:
        return [
            DefinitionError(
                path,
                "The base URL cannot carry a user name or password: keep the key in the "
                "provider's secret env value.",
            )
        ]
    return []


# OpenAI APIs this build can speak (``ModelDefinition.api``).
MODEL_APIS: dict[str, tuple[str, ...]] = {"openai": ("chat", "responses")}
# The API a NEW model of a provider gets when its author chooses none (studio form, the
# definition-write API). A stored or imported definition without ``api`` keeps Chat
# Completions: its behaviour must not change under it (docs/providers.md).
NEW_MODEL_API: dict[str, str] = {"openai": "responses"}


def new_model_api(provider: str | None, api: str | None, model_id: str = "") -> str | None:
    """The ``api`` to store for a model being created with ``api`` (None: not chosen).
    OpenAI's search models (``*-search-preview``) only exist on Chat Completions."""
    if api:
        return api
    if provider == "openai" and is_search_model(model_id or ""):
        return "chat"
    return NEW_MODEL_API.get(provider or "")


def _model_api_rules(model: ModelDefinition) -> list[DefinitionError]:
    """Refuse an API choice or a provider tool the runtime would not honour."""
    errs: list[DefinitionError] = []
    if model.api is not None:
        apis = MODEL_APIS.get(model.provider, ())
        if not apis:
            errs.append(DefinitionError("api", "Only OpenAI models choose an API."))
        elif model.api not in apis:
            errs.append(
                DefinitionError("api", f"This build speaks these OpenAI APIs: {', '.join(apis)}.")
            )
    offered = provider_offers(model)
    for i, name in enumerate(model.provider_tools or []):
        if name not in offered:
            what = ", ".join(offered) or "none"
            errs.append(
                DefinitionError(
                    f"providerTools.{i}",
                    f"Provider '{model.provider}' does not run a tool named '{name}'. "
                    f"It offers: {what}.",
                )
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
