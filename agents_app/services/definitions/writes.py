"""Create, update and delete one definition from the reference studio's editor bodies.

The studio sends the snake_case shapes it reads (``GET /api/prompts/{name}`` …), or our
camelCase ``definition`` object. Either becomes a spec definition and goes through
``save_definitions``: the same parsing, §9 rules and reference checks as the admin
studio and ``import_definitions``. Fields the listing shows but a definition does not
hold (``id``, ``created_at``, derived names) are dropped; anything else unknown is
refused by the parser, so no setting is silently ignored.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from django.db import transaction
from django.db.models import ProtectedError, Q

from agents_app.base.errors import Conflict, Invalid, NotFound
from agents_app.models import Agent, LanguageModel, Prompt, PromptPart, PromptTool
from agents_app.services.definitions import agent_fields
from agents_app.services.definitions import rows as defs
from agents_app.services.definitions import saves as definition_saves
from runtime.core.spec import (
    SPEC_0_1,
    AgentDefinition,
    ModelDefinition,
    PromptDefinition,
    agent_generation,
)
from runtime.definitions.generations import NotExpressible, agent_to_0_2
from runtime.definitions.validation import DefinitionError, new_model_api, parse_and_validate

Kind = Literal["agents", "prompts", "models"]

# Listing fields that describe, not define: sent back by the studio, dropped here.
_READ_ONLY: dict[str, set[str]] = {
    "models": {"id", "created_at", "definition", "provider_id", "iconId", "pricing_range"},
    "prompts": {"id", "created_at", "definition", "model_name", "model_provider"},
    "agents": {
        "id",
        "created_at",
        "definition",
        "packed",
        "parentHooks",  # written by _parent_hooks, not as a plain field
        "parent_hooks",
        "default_prompt",
        "default_model",
        "packageId",
        "source",
        "reasoning",  # ours: whether the agent's replies carry reasoning (derived)
    },
}
_SIDE_RENAMES = {"agent_prompt": "prompt", "agent_prompt_name": "prompt"}


def _parent_hooks(body: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
    """``parentHooks`` (either spelling; spec 0.2.0 row A7): the listing sends it as written
    and a studio echoes it. A list is written and ``[]`` clears stored ones; ``[]`` on an
    agent with none changes nothing, so a 0.1.0 agent's echo leaves it in 0.1.0. Hooks given
    to a 0.1.0 agent write it in 0.2.0, the only generation that has them."""
    given = [body[key] for key in ("parentHooks", "parent_hooks") if key in body]
    if not given:
        return data
    value = next((v for v in given if v), given[0])  # both sent: the one that says something
    if value and data and agent_generation(data)[0] == SPEC_0_1:
        stored = AgentDefinition.model_validate(data).dump()
        data = agent_fields.snake(AgentDefinition.model_validate(agent_to_0_2(stored)[0]))
    if value or data.get("parent_hooks"):
        data["parent_hooks"] = value or None
    return data


class DefinitionRejected(Exception):
    """Validation failed; ``field_errors`` maps a field path to its message."""

    def __init__(self, errors: list[DefinitionError]):
        self.field_errors = {e.path or "definition": e.message for e in errors}
        super().__init__("; ".join(str(e) for e in errors))


@dataclass
class Renamed:
    """What a rename changed (the reference's ``renamed``/``updatedPrompts``/``updatedAgents``)."""

    old: str
    new: str
    prompts: list[str] = field(default_factory=list)
    agents: list[str] = field(default_factory=list)


@dataclass
class Written:
    name: str
    created: bool
    renamed: Renamed | None = None


def _row(kind: Kind, name: str) -> Agent | Prompt | LanguageModel | None:
    if kind == "agents":
        return Agent.objects.filter(name=name[:129]).first()
    if kind == "prompts":
        return Prompt.objects.filter(name=name[:129]).first()
    return LanguageModel.objects.filter(name=name[:129]).first()


def stored_definition(
    kind: Kind, name: str
) -> AgentDefinition | PromptDefinition | ModelDefinition:
    row = _row(kind, name)
    if row is None:
        raise NotFound(f"{kind[:-1].capitalize()} not found: {name}")
    if isinstance(row, Agent):
        return defs.agent_definition(row)
    if isinstance(row, Prompt):
        return defs.prompt_definition(row)
    return defs.model_definition(row)


def current_definition(kind: Kind, name: str) -> dict[str, Any]:
    """The stored definition in snake_case (the base an update's fields apply to)."""
    definition = stored_definition(kind, name)
    if isinstance(definition, AgentDefinition):
        return agent_fields.snake(definition)
    snake: dict[str, Any] = definition.model_dump(mode="json", exclude_none=True)
    return snake


def _from_body(kind: Kind, body: dict[str, Any], base: dict[str, Any]) -> dict[str, Any]:
    # ``{"definition": {...}}`` alone is our camelCase form. A studio page sends back the
    # whole GET shape, ``definition`` included: its snake_case fields carry the edits then.
    edits = set(body) - _READ_ONLY[kind] - {"name"}
    if isinstance(body.get("definition"), dict) and not edits:
        named = dict(body["definition"])
        if "name" in body:
            named["name"] = body["name"]
        return named
    if kind == "agents":
        body, base = agent_fields.studio_body(body, base)
    else:
        body = agent_fields.env_alias(body)
    data = _parent_hooks(body, dict(base)) if kind == "agents" else dict(base)
    for key, value in body.items():
        if key in _READ_ONLY[kind]:
            continue
        if kind == "prompts" and key == "model_id":
            data["model"] = value
        elif kind == "prompts" and key == "prompt" and isinstance(value, str):
            data["prompt"] = _prompt_parts(value)
        elif kind == "agents" and key[:7] in ("side_a_", "side_b_"):
            side = data.setdefault(key[:6], {}) or {}
            field = key[7:]
            if field == "handler" and not value:
                continue  # only empty: no handler named
            if field == "subagents" and not value and not side.get("subagents"):
                continue  # none sent, none stored (a 0.1.0 agent stays 0.1.0); [] clears
            code = side.get("handler") is not None and field != "handler"
            if (side.get("human") or code) and agent_fields.echoed(field, value):
                continue  # a person's or handler's side: every field comes back, unset
            side[_SIDE_RENAMES.get(field, field)] = value
            data[key[:6]] = side
        else:
            data[key] = value
    if kind == "agents":
        agent_fields.drop_empty_side_b(data)
    return data


def _prompt_parts(text: str) -> Any:
    """The listing sends part arrays JSON-encoded; plain text stays text."""
    if text.lstrip().startswith("["):
        try:
            parts = json.loads(text)
        except ValueError:
            return text
        if isinstance(parts, list):
            return parts
    return text


@transaction.atomic
def definition_write(
    kind: Kind, body: dict[str, Any], *, name: str | None = None, author: Any = None
) -> Written:
    """Create (``name`` None) or update the definition ``name`` from an editor body. A body
    whose ``name`` differs renames it (``renames``): the rename, the references it
    cascades to and the save are one transaction, so a refused body changes nothing.

    ``versionNote`` in the body (ours) is the note of the version the save records."""
    body = dict(body)
    note = body.pop("versionNote", None) or ""
    if not isinstance(note, str):
        raise Invalid("versionNote must be text")
    base = current_definition(kind, name) if name is not None else {}
    try:
        data = _from_body(kind, body, base)
    except NotExpressible as exc:  # a 0.1.0 agent the body moves to 0.2.0 cannot say it
        raise DefinitionRejected([DefinitionError(exc.path, exc.message)]) from None
    new_name = str(data.get("name") or name or "")
    cascade: Renamed | None = None
    if name is not None and new_name != name:
        cascade = renames(kind, name, new_name)
    if name is not None:
        data["name"] = new_name
    elif _row(kind, new_name) is not None:
        raise Conflict(f"{kind[:-1].capitalize()} already exists: {data['name']}")
    if kind == "agents" and name is None and "state" not in data:
        # A new agent starts as a draft, as in the studio's form: staff try it before the chat
        # offers it. A body that says "published" is kept; files keep the shape's default
        # (docs/studio.md, "Publishing").
        data["state"] = "draft"
    if kind == "models" and name is None:
        # New OpenAI models speak the Responses API unless the body says otherwise.
        data["api"] = new_model_api(data.get("provider"), data.get("api"), data.get("model") or "")
    parsed, errors = parse_and_validate(kind, data)
    if parsed is None or errors:
        raise DefinitionRejected(errors)
    assert isinstance(parsed, AgentDefinition | PromptDefinition | ModelDefinition)
    try:
        definition_saves.save_definitions(
            [(f"{kind}/{parsed.name}", parsed)], author=author, note=note, source="api"
        )
    except defs.DefinitionsInvalid as exc:
        raise DefinitionRejected([e for errs in exc.errors.values() for e in errs]) from None
    return Written(name=parsed.name, created=name is None, renamed=cascade)


def definition_delete(kind: Kind, name: str) -> None:
    """Delete one definition; refused (409) while anything still uses it."""
    row = _row(kind, name)
    if row is None:
        raise NotFound(f"{kind[:-1].capitalize()} not found: {name}")
    if kind != "models":
        users = sorted(
            set(PromptTool.objects.filter(name=name).values_list("prompt__name", flat=True))
        )
        if users:
            raise Conflict(f"{name} is still used by prompts: {', '.join(users)}")
    try:
        with transaction.atomic():
            row.delete()
    except ProtectedError as exc:
        used_by = sorted({str(getattr(o, "name", o)) for o in exc.protected_objects})[:10]
        raise Conflict(f"{name} is still in use by: {', '.join(used_by)}") from None


def renames(kind: Kind, old: str, new: str) -> Renamed:
    """Rename the row ``old`` to ``new`` in the caller's transaction and carry every
    reference along: foreign keys (a prompt's model, a model's fallbacks, an agent's side
    prompts, included prompts, threads) follow the row by themselves; names held as text
    (prompt tool entries, a prompt's ``tool_choice``, an agent's stop / end-session tool)
    are rewritten here. The saved definition is validated after, by the caller."""
    if not new:
        raise Invalid("name is required")
    if _row(kind, new) is not None:
        raise Invalid(f"Cannot rename {old}: {kind[:-1]} {new} already exists")
    row = _row(kind, old)
    if row is None:
        raise NotFound(f"{kind[:-1].capitalize()} not found: {old}")
    type(row).objects.filter(pk=row.pk).update(name=new[:128])
    done = Renamed(old=old, new=new)
    if kind == "models":
        done.prompts = sorted(Prompt.objects.filter(model_id=row.pk).values_list("name", flat=True))
        return done
    tools = PromptTool.objects.filter(name=old)
    prompts = set(tools.values_list("prompt__name", flat=True))
    tools.update(name=new)
    choosing = Prompt.objects.filter(tool_choice=old)
    prompts |= set(choosing.values_list("name", flat=True))
    choosing.update(tool_choice=new)
    agents: set[str] = set()
    if kind == "prompts":
        agents |= set(
            Agent.objects.filter(
                Q(side_a_prompt_id=row.pk) | Q(side_b_prompt_id=row.pk)
            ).values_list("name", flat=True)
        )
        prompts |= set(
            PromptPart.objects.filter(include_id=row.pk).values_list("prompt__name", flat=True)
        )
    for side in ("side_a", "side_b"):
        for column in (f"{side}_stop_tool", f"{side}_end_session_tool"):
            named = Agent.objects.filter(**{column: old})
            agents |= set(named.values_list("name", flat=True))
            named.update(**{column: new})
    done.prompts = sorted(prompts - {new})
    done.agents = sorted(agents - {new})
    return done
