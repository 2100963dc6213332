"""Agents, prompts, models and MCP servers as definition objects: read, validate, write rows.

Rows become definitions (``agent_definition`` …) and definitions rows (``*_from_definition``);
``build_catalog`` and ``validate_definition`` apply the same §9 rules and reference checks
everywhere. The batch save every writer calls (the admin studio, the HTTP API,
``import_definitions``) builds on this module: ``definition_saves.save_definitions``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from django.contrib.auth.models import Group

from agents_app.models import (
    A2aAgent,
    Agent,
    EnvValue,
    KnowledgeBase,
    LanguageModel,
    McpServer,
    ModelFallback,
    Prompt,
    PromptPart,
    PromptTool,
)
from agents_app.services.definitions import a2a_agents as remote_agents
from agents_app.services.definitions.mcp_servers import (
    mcp_catalog,
    server_definition,
    server_errors,
)
from runtime.core.a2a_agents import A2aAgentDefinition
from runtime.core.provider_tools import ProviderToolOffer
from runtime.core.spec import (
    AgentDefinition,
    ModelCapabilities,
    ModelDefinition,
    PromptDefinition,
    PromptEnvPart,
    PromptIncludePart,
    PromptTextPart,
    PromptVariable,
    ReasoningConfig,
    ResumableConfig,
    SessionToolBinding,
    SideConfig,
    SubagentRelationship,
    ToolConfig,
    ToolEntry,
)
from runtime.core.spec import (
    PromptPart as PromptPartDef,
)
from runtime.definitions.entry_rules import HUMAN_A
from runtime.definitions.validation import (
    Catalog,
    DefinitionError,
    validate_agent,
    validate_model,
    validate_prompt,
)
from runtime.mcp.servers import McpServerDefinition
from runtime.providers.offers import allowed_offers

AnyDefinition = (
    AgentDefinition | PromptDefinition | ModelDefinition | McpServerDefinition | A2aAgentDefinition
)


class DefinitionsInvalid(Exception):
    """Raised by ``save_definitions``; ``errors`` maps a source label to its field errors."""

    def __init__(self, errors: dict[str, list[DefinitionError]]):
        self.errors = errors
        super().__init__("; ".join(f"{src}: {e}" for src, errs in errors.items() for e in errs))


# --- catalog ----------------------------------------------------------------------


def registered_code_names() -> tuple[set[str], set[str]] | None:
    """Names of code-defined tools and hooks, or None when no registry is loaded."""
    try:
        from agents_app.base.code_registry import get_registry
    except ImportError:
        return None
    registry = get_registry()
    return set(registry.tools), set(registry.hooks)


def registered_user_hooks() -> set[str]:
    """Ids of the registered user hooks (spec 0.2.0 §7: ``user_value_changed`` …)."""
    from agents_app.base.code_registry import get_registry
    from runtime.core.user_scope import USER_HOOK_NAMES

    return {h.id for h in get_registry().hooks.values() if h.hook in USER_HOOK_NAMES}


def registered_handlers() -> set[str]:
    """Names of the side handlers (``define_handler`` in ``agents/handlers/``)."""
    from agents_app.base.code_registry import get_registry

    return set(get_registry().handlers)


def build_catalog(
    extra: Iterable[AnyDefinition] = (), *, strict_code_names: bool | None = None
) -> Catalog:
    """Names in the database plus ``extra`` (definitions about to be saved together)."""
    catalog = Catalog(
        models=set(LanguageModel.objects.values_list("name", flat=True)),
        prompts=set(Prompt.objects.values_list("name", flat=True)),
        agents=set(Agent.objects.values_list("name", flat=True)),
        mcp_tools=mcp_catalog(d for d in extra if isinstance(d, McpServerDefinition)),
        a2a_agents=remote_agents.a2a_catalog(d for d in extra if isinstance(d, A2aAgentDefinition)),
        knowledge_bases=set(KnowledgeBase.objects.values_list("name", flat=True)),
    )
    for name, agent_type, exposed, side_a, handler_a in Agent.objects.values_list(
        "name", "type", "expose_as_tool", "side_a_prompt_id", "side_a_handler"
    ):
        person_a = side_a is None and not handler_a
        catalog.agent_shapes[name] = (HUMAN_A if person_a else agent_type, exposed)
    for name, model_name, reasoning in Prompt.objects.values_list(
        "name", "model__name", "reasoning"
    ):
        catalog.prompt_models[name] = model_name
        _note_reasoning(catalog, name, reasoning)
    catalog.prompts_with_tools = set(
        PromptTool.objects.values_list("prompt__name", flat=True).distinct()
    )
    _hook_edges(catalog)
    for part in PromptPart.objects.filter(type=PromptPart.Kind.INCLUDE).select_related(
        "prompt", "include"
    ):
        if part.include is not None:
            catalog.prompt_includes.setdefault(part.prompt.name, []).append(part.include.name)
    for name, provider, capabilities, model_id, api, tools in LanguageModel.objects.values_list(
        "name", "provider", "capabilities", "model", "api", "provider_tools"
    ):
        catalog.model_providers[name] = provider
        _note_capabilities(catalog, name, stored_capabilities(capabilities))
        catalog.model_offers[name] = model_offers(name, provider, model_id, api, tools)
    for link in ModelFallback.objects.select_related("model", "fallback"):
        catalog.model_fallbacks.setdefault(link.model.name, []).append(link.fallback.name)
    for d in extra:
        if isinstance(d, ModelDefinition):
            catalog.models.add(d.name)
            catalog.model_fallbacks[d.name] = list(d.fallbacks or [])
            catalog.model_providers[d.name] = d.provider
            catalog.model_offers[d.name] = allowed_offers(d)
            _note_capabilities(catalog, d.name, d.capabilities)
        elif isinstance(d, PromptDefinition):
            catalog.prompts.add(d.name)
            catalog.prompt_includes[d.name] = d.include_names()
            catalog.prompt_models[d.name] = d.model
            _note_reasoning(catalog, d.name, d.reasoning.dump() if d.reasoning else None)
            if d.tools:
                catalog.prompts_with_tools.add(d.name)
            else:
                catalog.prompts_with_tools.discard(d.name)
            catalog.prompt_hooks[d.name] = list(d.hooks or [])
            catalog.prompt_tools[d.name] = d.tool_names()
        elif isinstance(d, AgentDefinition):
            catalog.agents.add(d.name)
            shape = HUMAN_A if d.human_side() == "a" else d.type
            catalog.agent_shapes[d.name] = (shape, d.expose_as_tool)
            # Saved in this batch: its own rule speaks for it (agent_hooks_errors), so the
            # prompt rule, which reads agent_hooks, does not name the same conflict again.
            catalog.agent_hooks.pop(d.name, None)
    code = registered_code_names()
    if code is not None:
        catalog.tools, catalog.hooks = code
        catalog.handlers = registered_handlers()
        catalog.user_hooks = registered_user_hooks()
    catalog.strict_code_names = code is not None if strict_code_names is None else strict_code_names
    return catalog


def stored_capabilities(stored: dict[str, Any] | None) -> ModelCapabilities | None:
    """A row's capabilities column as the definition reads it (None: empty or hand-broken)."""
    try:
        return ModelCapabilities.model_validate(stored) if stored else None
    except ValueError:
        return None


def _note_capabilities(catalog: Catalog, name: str, caps: ModelCapabilities | None) -> None:
    catalog.model_structured_outputs[name] = caps.json_mode if caps else None
    catalog.model_function_calling[name] = caps.tool_calls if caps else None
    levels = caps.effort_names() if caps else None
    if levels is None:
        catalog.model_reasoning_levels.pop(name, None)
    else:
        catalog.model_reasoning_levels[name] = levels


def _note_reasoning(catalog: Catalog, name: str, reasoning: dict[str, Any] | None) -> None:
    asks = reasoning and (reasoning.get("effort") or reasoning.get("maxTokens"))
    if asks:
        catalog.prompt_reasoning[name] = (reasoning or {}).get("effort") or ""
    else:
        catalog.prompt_reasoning.pop(name, None)


def _hook_edges(catalog: Catalog) -> None:
    """What the agent hooks rule reads (``runtime.definitions.entry_rules.agent_hooks_errors``): the hooks
    prompts and agents list, prompts' tool names (their sub-prompts), agents' side prompts."""
    for name, hooks in Prompt.objects.exclude(hooks=[]).values_list("name", "hooks"):
        catalog.prompt_hooks[name] = list(hooks or [])
    for prompt_name, tool in PromptTool.objects.values_list("prompt__name", "name"):
        catalog.prompt_tools.setdefault(prompt_name, []).append(tool)
    rows = Agent.objects.exclude(hooks=[]).values_list(
        "name", "hooks", "type", "side_a_prompt__name", "side_b_prompt__name"
    )
    for name, hooks, agent_type, side_a, side_b in rows:
        sides = [side for side in (side_a, side_b) if side]
        if agent_type != "dual_ai" and side_a:
            sides = [side_a]  # a 0.1.0 ai_human agent's stored side B never runs
        catalog.agent_hooks[name] = (list(hooks or []), sides)


def model_offers(
    name: str, provider: str, model_id: str, api: str, tools: list[str] | None
) -> dict[str, ProviderToolOffer]:
    """The provider tools a prompt on a stored model may use (its ``providerTools`` narrow
    its vendor's offers)."""
    try:
        model = ModelDefinition(
            name=name,
            provider=provider,  # type: ignore[arg-type]
            model=model_id or "",
            api=api or None,  # type: ignore[arg-type]
            provider_tools=list(tools) if tools else None,
        )
    except ValueError:
        return {}  # an unknown provider or API offers nothing
    return allowed_offers(model)


def validate_definition(defn: AnyDefinition, catalog: Catalog) -> list[DefinitionError]:
    if isinstance(defn, AgentDefinition):
        return validate_agent(defn, catalog)
    if isinstance(defn, PromptDefinition):
        return validate_prompt(defn, catalog)
    if isinstance(defn, McpServerDefinition):
        # Files are imported by an operator: only the instance's stdio setting applies.
        return server_errors(defn)
    if isinstance(defn, A2aAgentDefinition):
        return remote_agents.remote_errors(defn)
    return validate_model(defn, catalog)


# --- database → definition ---------------------------------------------------------


def _price(value: Decimal | None) -> float | None:
    return float(value) if value is not None else None


def model_definition(m: LanguageModel) -> ModelDefinition:
    return ModelDefinition(
        name=m.name,
        provider=m.provider,  # type: ignore[arg-type]
        model=m.model,
        included_providers=list(m.included_providers) or None,
        fallbacks=m.fallback_names() or None,
        input_price=_price(m.input_price),
        output_price=_price(m.output_price),
        cached_price=_price(m.cached_price),
        capabilities=ModelCapabilities.model_validate(m.capabilities) if m.capabilities else None,
        base_url=m.base_url or None,
        provider_tools=list(m.provider_tools) or None,
        api=m.api or None,  # type: ignore[arg-type]
        script=m.script_obj(),
        streaming=m.streaming_obj(),
    )


def _part_definition(p: PromptPart) -> PromptPartDef:
    if p.type == PromptPart.Kind.INCLUDE:
        return PromptIncludePart(prompt=p.include.name if p.include else "")
    if p.type == PromptPart.Kind.ENV:
        return PromptEnvPart(property=p.env_key)
    return PromptTextPart(content=p.content)


def _tool_entry(t: PromptTool) -> ToolEntry:
    cfg = ToolConfig(
        name=t.name,
        include_text_response=t.include_text_response,
        include_tool_calls=t.include_tool_calls,
        include_errors=t.include_errors,
        init_user_message_property=t.init_user_message_property or None,
        init_attachments_property=t.init_attachments_property or None,
        init_agent_name_property=t.init_agent_name_property or None,
        env=t.env or None,
        optional=t.optional or None,
        immediate=t.immediate,
        blocking=t.blocking,
        requires_approval=t.requires_approval,
        client=t.client,
        wait_timeout_seconds=t.wait_timeout_seconds,
        options=t.options if t.options is not None else None,
        resumable=ResumableConfig(
            receives_messages=t.receives_messages, max_instances=t.max_instances
        )  # type: ignore[arg-type]
        if t.resumable
        else None,
        scoped_env=t.scoped_env or None,
        parent_communication=t.parent_communication or None,  # type: ignore[arg-type]
        hidden=t.hidden or None,
    )
    return t.name if cfg.is_plain else cfg


def _definition_env(values: Iterable[EnvValue]) -> dict[str, str | None] | None:
    # Secret values never leave the database through definitions: they are withheld as null.
    env = {v.key: (v.value if v.value_type == EnvValue.Type.TEXT else None) for v in values}
    return env or None


def prompt_definition(p: Prompt) -> PromptDefinition:
    parts = [_part_definition(x) for x in p.parts.select_related("include").all()]
    return PromptDefinition(
        name=p.name,
        tool_description=p.tool_description,
        prompt=parts if parts else p.text,
        model=p.model.name,
        include_chat=p.include_chat,
        include_past_tools=p.include_past_tools,
        parallel_tool_calls=p.parallel_tool_calls,
        tool_choice=p.tool_choice,  # type: ignore[arg-type]
        required_schema=p.required_schema,
        response_schema=p.response_schema,
        tools=[_tool_entry(t) for t in p.tool_entries.all()] or None,
        reasoning=ReasoningConfig.model_validate(p.reasoning) if p.reasoning else None,
        recent_image_threshold=p.recent_image_threshold,
        hooks=list(p.hooks) or None,
        env=_definition_env(p.env_values.filter(scope=EnvValue.Scope.PROMPT)),
        step_budget_warning=p.step_budget_warning,
        variables=[PromptVariable.model_validate(v) for v in p.variables] or None,
    )


def _side_definition(a: Agent, side: str) -> SideConfig | None:
    prompt = getattr(a, f"side_{side}_prompt")
    handler = getattr(a, f"side_{side}_handler")
    if handler:  # spec 0.2.0: code takes this side's turns
        return SideConfig(
            prompt=None, handler=handler, label=getattr(a, f"side_{side}_label") or None
        )
    if prompt is None:
        # 0.2.0 names the person's side ({human: true}); 0.1.0's ai_human leaves side B out.
        if a.spec_version == Agent.Spec.V0_2 and (side == "a" or a.type == Agent.Type.AI_HUMAN):
            label = getattr(a, f"side_{side}_label") or None
            return SideConfig(prompt=None, human=True, label=label)
        return None
    return SideConfig(
        prompt=prompt.name,
        label=getattr(a, f"side_{side}_label") or None,
        stop_on_response=getattr(a, f"side_{side}_stop_on_response"),
        stop_tool=getattr(a, f"side_{side}_stop_tool") or None,
        stop_tool_response_property=getattr(a, f"side_{side}_stop_tool_response_property") or None,
        max_steps=getattr(a, f"side_{side}_max_steps"),
        max_turns=getattr(a, f"side_{side}_max_turns"),
        end_session_tool=getattr(a, f"side_{side}_end_session_tool") or None,
        **_session_tools(getattr(a, f"side_{side}_session_tools")),
        subagents=[
            SubagentRelationship.model_validate(r) for r in getattr(a, f"side_{side}_subagents")
        ]
        or None,
    )


_SESSION_TOOL_KEYS = {
    "sessionStop": "session_stop",
    "sessionFail": "session_fail",
    "sessionStatus": "session_status",
}


def _session_tools(stored: dict[str, Any] | None) -> dict[str, SessionToolBinding]:
    """The stored ``{sessionStop: {...}, ...}`` column as SideConfig keyword arguments."""
    stored = stored or {}
    return {
        attr: SessionToolBinding.model_validate(stored[key])
        for key, attr in _SESSION_TOOL_KEYS.items()
        if stored.get(key)
    }


def session_tools_column(cfg: SideConfig | None) -> dict[str, Any]:
    """A side's session tools as stored (spec camelCase, only those set)."""
    if cfg is None:
        return {}
    return {
        key: getattr(cfg, attr).dump()
        for key, attr in _SESSION_TOOL_KEYS.items()
        if getattr(cfg, attr) is not None
    }


def agent_definition(a: Agent) -> AgentDefinition:
    side_a = _side_definition(a, "a")
    assert side_a is not None  # a prompt, or the person of a 0.2.0 agent
    v0_2 = a.spec_version == Agent.Spec.V0_2
    packaging = a.packaging or {}
    # The generation is the shape (``runtime.core.spec.agent_generation``): 0.1.0 says
    # ``type``, 0.2.0 names side B and the 0.2.0-only keys.
    generation: dict[str, Any] = (
        {
            "primary": a.primary,
            "package_name": packaging.get("packageName"),
            "version": packaging.get("version"),
            "author": packaging.get("author"),
            "license": packaging.get("license"),
            "parent_hooks": list(a.parent_hooks) or None,
        }
        if v0_2
        else {"type": a.type}
    )
    return AgentDefinition(
        name=a.name,
        title=a.title or None,
        tool_activity=a.tool_activity or None,  # type: ignore[arg-type]
        **generation,
        max_session_turns=a.max_session_turns,
        side_a=side_a,
        side_b=_side_definition(a, "b"),
        expose_as_tool=a.expose_as_tool,
        tool_description=a.tool_description or None,
        description=a.description or None,
        icon=a.icon or None,
        tags=list(a.tags) or None,
        hooks=list(a.hooks) or None,
        env=_definition_env(a.env_values.filter(scope=EnvValue.Scope.AGENT)),
        feedback_reasons=list(a.feedback_reasons) or None,
        mid_run_messages=a.mid_run_messages,  # type: ignore[arg-type]
        state=a.state,  # type: ignore[arg-type]
        audience=sorted(g.name for g in a.audience_groups.all()) or None,
    )


def all_definitions() -> dict[str, list[AnyDefinition]]:
    return {
        "mcp": [server_definition(r) for r in McpServer.objects.all()],
        "a2a": [remote_agents.remote_definition(r) for r in A2aAgent.objects.all()],
        "models": [model_definition(m) for m in LanguageModel.objects.all()],
        "prompts": [prompt_definition(p) for p in Prompt.objects.select_related("model")],
        "agents": [
            agent_definition(a)
            for a in Agent.objects.select_related("side_a_prompt", "side_b_prompt")
        ],
    }


# --- definition → database ----------------------------------------------------------


def _dec(value: float | None) -> Decimal | None:
    return Decimal(str(value)) if value is not None else None


def model_from_definition(d: ModelDefinition) -> LanguageModel:
    """Upsert the model's own fields; fallbacks are linked by ``link_model_fallbacks``."""
    m, _ = LanguageModel.objects.update_or_create(
        name=d.name,
        defaults={
            "provider": d.provider,
            "model": d.model,
            "included_providers": d.included_providers or [],
            "input_price": _dec(d.input_price),
            "output_price": _dec(d.output_price),
            "cached_price": _dec(d.cached_price),
            "capabilities": d.capabilities.dump() if d.capabilities else {},
            "base_url": d.base_url or "",
            "provider_tools": d.provider_tools or [],
            "api": d.api or "",
            "script": [r.dump() for r in d.script] if d.script is not None else None,
            "streaming": d.streaming.dump() if d.streaming else None,
        },
    )
    return m


def link_model_fallbacks(d: ModelDefinition) -> None:
    m = LanguageModel.objects.get(name=d.name)
    m.fallback_links.all().delete()
    by_name = LanguageModel.objects.in_bulk(d.fallbacks or [], field_name="name")
    ModelFallback.objects.bulk_create(
        ModelFallback(model=m, fallback=by_name[name], position=i)
        for i, name in enumerate(d.fallbacks or [])
    )


def _save_env(scope: str, owner: dict[str, Any], env: dict[str, Any] | None) -> None:
    """Definition env: keys absent from ``env`` are removed; null keeps a withheld secret."""
    existing = {v.key: v for v in EnvValue.objects.filter(scope=scope, **owner)}
    wanted = env or {}
    for key, row in existing.items():
        if key not in wanted:
            row.delete()
    for key, value in wanted.items():
        if value is None:
            continue
        row = existing.get(key) or EnvValue(
            scope=scope, key=key, value_type=EnvValue.Type.SECRET, **owner
        )
        # tenvs values may be any JSON; store non-text ones as JSON (not Python's repr).
        row.value = value if isinstance(value, str) else json.dumps(value)
        row.save()


def prompt_from_definition(d: PromptDefinition) -> Prompt:
    """Upsert the prompt's own fields; parts and tools are set by ``link_prompt_parts``."""
    p, _ = Prompt.objects.update_or_create(
        name=d.name,
        defaults={
            "tool_description": d.tool_description,
            "text": d.prompt if isinstance(d.prompt, str) else "",
            "model": LanguageModel.objects.get(name=d.model),
            "include_chat": d.include_chat,
            "include_past_tools": d.include_past_tools,
            "parallel_tool_calls": d.parallel_tool_calls,
            "tool_choice": d.tool_choice,
            "required_schema": d.required_schema,
            "response_schema": d.response_schema,
            "reasoning": d.reasoning.dump() if d.reasoning else None,
            "recent_image_threshold": d.recent_image_threshold,
            "hooks": d.hooks or [],
            "step_budget_warning": d.step_budget_warning,
            "variables": [v.dump() for v in d.variables or []],
        },
    )
    _save_env(EnvValue.Scope.PROMPT, {"prompt": p}, d.env)
    return p


def _tool_row(p: Prompt, i: int, entry: ToolEntry) -> PromptTool:
    cfg = ToolConfig(name=entry) if isinstance(entry, str) else entry
    resumable = cfg.resumable if isinstance(cfg.resumable, ResumableConfig) else None
    return PromptTool(
        prompt=p,
        position=i,
        name=cfg.name,
        include_text_response=cfg.include_text_response,
        include_tool_calls=cfg.include_tool_calls,
        include_errors=cfg.include_errors,
        init_user_message_property=cfg.init_user_message_property or "",
        init_attachments_property=cfg.init_attachments_property or "",
        init_agent_name_property=cfg.init_agent_name_property or "",
        optional=cfg.optional or "",
        immediate=cfg.immediate,
        blocking=cfg.blocking,
        resumable=resumable is not None,
        receives_messages=resumable.receives_messages if resumable else "side_a",
        max_instances=resumable.max_instances if resumable else None,
        env=cfg.env,
        scoped_env=cfg.scoped_env,
        parent_communication=cfg.parent_communication or "",
        hidden=bool(cfg.hidden),
        requires_approval=cfg.requires_approval,
        client=cfg.client,
        wait_timeout_seconds=cfg.wait_timeout_seconds,
        options=cfg.options,
    )


def link_prompt_parts(d: PromptDefinition) -> None:
    p = Prompt.objects.get(name=d.name)
    p.parts.all().delete()
    p.tool_entries.all().delete()
    if isinstance(d.prompt, list):
        includes = Prompt.objects.in_bulk(d.include_names(), field_name="name")
        PromptPart.objects.bulk_create(
            PromptPart(
                prompt=p,
                position=i,
                type=part.type,
                content=part.content if isinstance(part, PromptTextPart) else "",
                include=includes[part.prompt] if isinstance(part, PromptIncludePart) else None,
                env_key=part.property if isinstance(part, PromptEnvPart) else "",
            )
            for i, part in enumerate(d.prompt)
        )
    PromptTool.objects.bulk_create(_tool_row(p, i, t) for i, t in enumerate(d.tools or []))


def _side_fields(side: str, cfg: SideConfig | None) -> dict[str, Any]:
    if cfg is not None and (cfg.human or cfg.handler is not None):
        # A person's or a handler's side: only the label and the handler are kept
        # (validation refuses the rest).
        return {
            **_side_fields(side, None),
            f"side_{side}_label": cfg.label or "",
            f"side_{side}_handler": cfg.handler or "",
        }
    return {
        f"side_{side}_handler": "",
        f"side_{side}_label": cfg.label or "" if cfg else "",
        f"side_{side}_prompt": Prompt.objects.get(name=cfg.prompt) if cfg else None,
        f"side_{side}_stop_on_response": cfg.stop_on_response if cfg else True,
        f"side_{side}_stop_tool": cfg.stop_tool or "" if cfg else "",
        f"side_{side}_stop_tool_response_property": cfg.stop_tool_response_property or ""
        if cfg
        else "",
        f"side_{side}_max_steps": cfg.max_steps if cfg else None,
        f"side_{side}_max_turns": cfg.max_turns if cfg else None,
        f"side_{side}_end_session_tool": cfg.end_session_tool or "" if cfg else "",
        f"side_{side}_session_tools": session_tools_column(cfg),
        f"side_{side}_subagents": [r.dump() for r in cfg.subagents or []] if cfg else [],
    }


def packaging_column(d: AgentDefinition) -> dict[str, str]:
    """The 0.2.0 packaging metadata as stored (camelCase, only what is given)."""
    given = {
        "packageName": d.package_name,
        "version": d.version,
        "author": d.author,
        "license": d.license,
    }
    return {key: value for key, value in given.items() if value is not None}


def agent_from_definition(d: AgentDefinition) -> Agent:
    a, _ = Agent.objects.update_or_create(
        name=d.name,
        defaults={
            "title": d.title or "",
            "tool_activity": d.tool_activity or "",
            "type": d.type,
            "spec_version": d.spec,
            "primary": d.primary,
            "packaging": packaging_column(d),
            "parent_hooks": [r.dump() for r in d.parent_hooks or []],
            "max_session_turns": d.max_session_turns,
            "expose_as_tool": d.expose_as_tool,
            "tool_description": d.tool_description or "",
            "description": d.description or "",
            "icon": d.icon or "",
            "tags": d.tags or [],
            "hooks": d.hooks or [],
            "feedback_reasons": d.feedback_reasons or [],
            "mid_run_messages": d.mid_run_messages,
            "state": d.state,
            **_side_fields("a", d.side_a),
            **_side_fields("b", d.side_b),
        },
    )
    _save_env(EnvValue.Scope.AGENT, {"agent": a}, d.env)
    # A group named in a file but not here yet is created empty: the agent then reaches
    # nobody but staff until people are added to it, which is what the file asks for.
    a.audience_groups.set([Group.objects.get_or_create(name=n)[0] for n in d.audience or []])
    return a
