"""Remote A2A agents over the API (``/api/a2a-agents``, docs/api.md "The A2A client"): read,
create, update and delete, with the studio form's rules and its one save path.

A body is the definition's camelCase fields (``name``, ``url``, ``description``,
``headers``, ``timeoutMs``, ``enabled``; the shape of ``a2a/<name>.json``). An update
changes the fields it names and keeps the others; the name is fixed once saved (prompts
list the agent as ``a2a:<name>``). Every write goes through ``save_definitions`` (its
parsing refuses unknown fields; its rules check the URL against the egress policy and the
env values the headers name) and asks ``instance_secret_errors``, as the studio form
does. What comes back (``remote_wire``) holds the headers as saved (``${NAME}``
placeholders: a literal credential is refused at save) and the cached card (redacted when
it was fetched), never an env value.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from agents_app.base.errors import Conflict, NotFound
from agents_app.models import A2aAgent, PromptTool
from agents_app.services.definitions.a2a_agents import instance_secret_errors, remote_definition
from agents_app.services.definitions.rows import DefinitionsInvalid
from agents_app.services.definitions.saves import save_definitions
from runtime.core.a2a_agents import PREFIX, A2aAgentDefinition
from runtime.core.definition_errors import DefinitionError, parse


class RemoteRejected(Exception):
    """Validation failed; ``field_errors`` maps a field path to its message."""

    def __init__(self, errors: list[DefinitionError]) -> None:
        self.field_errors = {e.path or "definition": e.message for e in errors}
        super().__init__("; ".join(str(e) for e in errors))


def remote_wire(row: A2aAgent) -> dict[str, Any]:
    """One remote agent as the API shows it: its definition, and its card as last fetched."""
    return {
        **remote_definition(row).model_dump(by_alias=True, mode="json"),
        "card": row.card,
        "cardFetchedAt": row.card_fetched_at.isoformat() if row.card_fetched_at else None,
        "lastError": row.last_error,
        "createdAt": row.created_at.isoformat(),
        "updatedAt": row.updated_at.isoformat(),
    }


def remote_list() -> list[A2aAgent]:
    return list(A2aAgent.objects.order_by("name"))


def remote_get(name: str) -> A2aAgent:
    row = A2aAgent.objects.filter(name=name).first()
    if row is None:
        raise NotFound(f"A2A agent not found: {name[:200]}")
    return row


def remote_write(
    body: dict[str, Any], *, actor: Any, name: str | None = None, author: Any = None
) -> A2aAgent:
    """Create the agent ``body`` defines (``name`` None), or update agent ``name`` with the
    fields ``body`` names. ``RemoteRejected`` with every field's error; nothing is saved."""
    stored = remote_get(name) if name is not None else None
    if stored is None and A2aAgent.objects.filter(name=str(body.get("name") or "")).exists():
        raise Conflict(
            f"An A2A agent named {str(body.get('name'))[:200]} exists: update it with PUT."
        )
    data = dict(body)
    if stored is not None:
        if "name" in data and data["name"] != stored.name:
            raise RemoteRejected(
                [
                    DefinitionError(
                        "name",
                        "The name is fixed once saved (prompts list it as a2a:<name>); "
                        "create a new agent under the new name instead.",
                    )
                ]
            )
        data = {**remote_definition(stored).model_dump(by_alias=True, mode="json"), **data}
    definition, errors = parse(A2aAgentDefinition, data)
    if definition is None:
        raise RemoteRejected(errors)
    secret = instance_secret_errors(definition, actor, stored)
    if secret:
        raise RemoteRejected(secret)
    try:
        save_definitions([("api", definition)], author=author, source="api")
    except DefinitionsInvalid as exc:
        raise RemoteRejected([e for errs in exc.errors.values() for e in errs]) from None
    return remote_get(definition.name)


def remote_delete(name: str) -> None:
    """Delete agent ``name``; refused (409) while a prompt lists it as ``a2a:<name>``."""
    row = remote_get(name)
    users = sorted(
        set(PromptTool.objects.filter(name=PREFIX + name).values_list("prompt__name", flat=True))
    )
    if users:
        raise Conflict(f"{PREFIX}{name} is still used by prompts: {', '.join(users)}")
    with transaction.atomic():
        row.delete()
