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
from dataclasses import dataclass
from typing import Any, Literal

from django.db import transaction
from django.db.models import ProtectedError

from agents_app.errors import Conflict, Invalid, NotFound
from agents_app.models import Agent, LanguageModel, Prompt, PromptTool
from agents_app.services import definitions as defs
from runtime.definitions import AgentDefinition, ModelDefinition, PromptDefinition
from runtime.validation import DefinitionError, parse_and_validate

Kind = Literal["agents", "prompts", "models"]

# Listing fields that describe, not define: sent back by the studio, dropped here.
_READ_ONLY: dict[str, set[str]] = {
    "models": {"id", "created_at", "definition", "provider_id", "iconId", "pricing_range"},
    "prompts": {"id", "created_at", "definition", "model_name", "model_provider", "variables"},
    "agents": {
        "id",
        "created_at",
        "definition",
        "packed",
        "primary",
        "parentHooks",
        "parent_hooks",
        "side_a_backing",
        "side_b_backing",
        "default_prompt",
        "default_model",
        "packageId",
        "source",
    },
}
_SIDE_RENAMES = {"agent_prompt": "prompt", "agent_prompt_name": "prompt"}


class DefinitionRejected(Exception):
    """Validation failed; ``field_errors`` maps a field path to its message."""

    def __init__(self, errors: list[DefinitionError]):
        self.field_errors = {e.path or "definition": e.message for e in errors}
        super().__init__("; ".join(str(e) for e in errors))


@dataclass
class Written:
    name: str
    created: bool


def _row(kind: Kind, name: str) -> Agent | Prompt | LanguageModel | None:
    if kind == "agents":
        return Agent.objects.filter(name=name[:129]).first()
    if kind == "prompts":
        return Prompt.objects.filter(name=name[:129]).first()
    return LanguageModel.objects.filter(name=name[:129]).first()


def current_definition(kind: Kind, name: str) -> dict[str, Any]:
    """The stored definition in snake_case (the base an update's fields apply to)."""
    row = _row(kind, name)
    if row is None:
        raise NotFound(f"{kind[:-1].capitalize()} not found: {name}")
    if isinstance(row, Agent):
        definition: Any = defs.agent_definition(row)
    elif isinstance(row, Prompt):
        definition = defs.prompt_definition(row)
    else:
        definition = defs.model_definition(row)
    snake: dict[str, Any] = definition.model_dump(mode="json", exclude_none=True)
    return snake


def _from_body(kind: Kind, body: dict[str, Any], base: dict[str, Any]) -> dict[str, Any]:
    if isinstance(body.get("definition"), dict):
        return dict(body["definition"])
    data = dict(base)
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
            if field in ("handler", "subagents") and not value:
                continue  # handler-backed sides and side subagents are not ours: only empty
            side[_SIDE_RENAMES.get(field, field)] = value
            data[key[:6]] = side
        else:
            data[key] = value
    if (
        kind == "agents"
        and isinstance(data.get("side_b"), dict)
        and not data["side_b"].get("prompt")
    ):
        data.pop("side_b")
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


def definition_write(
    kind: Kind, body: dict[str, Any], *, name: str | None = None, author: Any = None
) -> Written:
    """Create (``name`` None) or update the definition ``name`` from an editor body.

    ``versionNote`` in the body (ours) is the note of the version the save records."""
    body = dict(body)
    note = body.pop("versionNote", None) or ""
    if not isinstance(note, str):
        raise Invalid("versionNote must be text")
    base = current_definition(kind, name) if name is not None else {}
    data = _from_body(kind, body, base)
    if name is not None and data.get("name", name) != name:
        raise Invalid(
            f"Renaming is not supported: create {data.get('name')} and delete {name} instead"
        )
    if name is not None:
        data["name"] = name
    elif _row(kind, str(data.get("name") or "")) is not None:
        raise Conflict(f"{kind[:-1].capitalize()} already exists: {data['name']}")
    parsed, errors = parse_and_validate(kind, data)
    if parsed is None or errors:
        raise DefinitionRejected(errors)
    assert isinstance(parsed, AgentDefinition | PromptDefinition | ModelDefinition)
    try:
        defs.save_definitions(
            [(f"{kind}/{parsed.name}", parsed)], author=author, note=note, source="api"
        )
    except defs.DefinitionsInvalid as exc:
        raise DefinitionRejected([e for errs in exc.errors.values() for e in errs]) from None
    return Written(name=parsed.name, created=name is None)


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
