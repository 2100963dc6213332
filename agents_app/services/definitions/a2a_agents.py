"""Remote A2A agents as definitions: rows ↔ definitions and the save rules that need the
database or the process (the egress policy, the env values a header names). The wire client
and the engine's ``A2aAgents`` are ``services/doors/a2a_client.py`` (docs/api.md "A2A client").
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from agents_app.base.permissions import may_read_instance_env
from agents_app.models import A2aAgent, EnvValue
from runtime.core import egress
from runtime.core.a2a_agents import A2aAgentDefinition, card_url, validate_agent
from runtime.core.definition_errors import DefinitionError
from runtime.core.env_refs import references


def remote_definition(row: A2aAgent) -> A2aAgentDefinition:
    return A2aAgentDefinition(
        name=row.name,
        url=row.url,
        description=row.description,
        headers=dict(row.headers or {}),
        timeout_ms=row.timeout_ms,
        enabled=row.enabled,
    )


def remote_errors(d: A2aAgentDefinition) -> list[DefinitionError]:
    """Every reason not to save ``d``: its own rules, then where it points and what it needs."""
    errs = validate_agent(d)
    if any(e.path == "url" for e in errs):
        return errs
    refused = egress.refusal(card_url(d.url))
    if refused:
        errs.append(
            DefinitionError(
                "url",
                f"The egress policy does not allow this address: {refused}. An operator can "
                "allow the host with STUDIO_EGRESS_ALLOW.",
            )
        )
    names = {n for value in d.headers.values() for n in references(value)}
    known = set(EnvValue.objects.filter(key__in=names).values_list("key", flat=True))
    for key, value in d.headers.items():
        for name in references(value):
            if name not in known:
                errs.append(
                    DefinitionError(
                        f"headers.{key}",
                        f"Header {key} uses env value {name}, which is not set anywhere: "
                        "add it under Env values first.",
                    )
                )
    return errs


def remote_from_definition(d: A2aAgentDefinition) -> A2aAgent:
    """Upsert the row; a changed URL forgets the cached card (it may be another agent)."""
    row = A2aAgent.objects.filter(name=d.name).first()
    forget: dict[str, Any] = {}
    if row is not None and row.url != d.url:
        forget = {"card": None, "card_fetched_at": None, "last_error": ""}
    row, _ = A2aAgent.objects.update_or_create(
        name=d.name,
        defaults={
            **forget,
            "url": d.url,
            "description": d.description,
            "headers": dict(d.headers),
            "timeout_ms": d.timeout_ms,
            "enabled": d.enabled,
        },
    )
    return row


def a2a_catalog(extra: Iterable[A2aAgentDefinition] = ()) -> set[str]:
    """The names a prompt's ``a2a:<name>`` may use: saved agents and those saved with it."""
    return set(A2aAgent.objects.values_list("name", flat=True)) | {d.name for d in extra}


# --- who may point a header at a host -------------------------------------------------------


def instance_secret_errors(
    d: A2aAgentDefinition, actor: Any, stored: A2aAgent | None
) -> list[DefinitionError]:
    """Headers name env values that threads resolve down to the instance's: whoever points
    them somewhere (a new agent, a changed URL or header) could send the instance's secret
    to a host of their choosing, so that takes the right to read instance env values, as the
    studio's own "Fetch the card" does. The studio form and the API both ask this."""
    if actor is None or may_read_instance_env(actor):
        return []
    unchanged = stored is not None and (
        stored.url == d.url and dict(stored.headers or {}) == dict(d.headers)
    )
    if unchanged:
        return []
    names = {n for value in d.headers.values() for n in references(value)}
    instance = set(
        EnvValue.objects.filter(scope="instance", key__in=names).values_list("key", flat=True)
    )
    return [
        DefinitionError(
            f"headers.{key}",
            f"Header {key} uses {name}, an instance env value you may not read: this save "
            "would send it to the URL given here. Ask someone who may read instance env "
            "values to save this agent, or use an env value of your own.",
        )
        for key, value in d.headers.items()
        for name in sorted(set(references(value)) & instance)
    ]
