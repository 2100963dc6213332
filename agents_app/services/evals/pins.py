"""The definition versions an eval run asks for, as people write them (issue #55).

``{"slow_writer": 2}`` means the model (or prompt, or agent) called slow_writer that the run's
agent uses; ``model/slow_writer`` is understood as ``models/slow_writer``. A name the agent
does not use, or one that is ambiguous, is refused with the names it does use, instead of
the engine's "not used by agent" for a pin that only lacked its kind."""

from __future__ import annotations

from agents_app.base.errors import Invalid
from agents_app.services.definitions import versions as definition_versions

SINGULAR = {"agent": "agents", "prompt": "prompts", "model": "models"}


def used_by(agent: str) -> list[str]:
    """Every definition a session of ``agent`` may load at its newest versions, as
    ``kind/name`` keys (the agent first)."""
    todo = [("agents", agent)]
    seen: list[str] = []
    while todo:
        kind, name = todo.pop(0)
        key = f"{kind}/{name}"
        if key in seen:
            continue
        found = definition_versions.newest(kind, name)
        if found is None:
            continue
        seen.append(key)
        todo += definition_versions.references(kind, found[1])
    return seen


def _listed(keys: list[str]) -> str:
    return ", ".join(keys) or "nothing"


def resolve(agent: str, asked: dict[str, int]) -> dict[str, int]:
    """``asked`` with every key as ``kind/name``; ``Invalid`` with the right reason else."""
    if not asked:
        return {}
    used = used_by(agent)
    by_name: dict[str, list[str]] = {}
    for key in used:
        by_name.setdefault(key.split("/", 1)[1], []).append(key)
    resolved: dict[str, int] = {}
    for raw, number in asked.items():
        text = raw.strip()
        kind, _, name = text.rpartition("/")
        kind = SINGULAR.get(kind, kind)
        if kind and kind not in definition_versions.KINDS:
            raise Invalid(
                f"versions: {raw} starts with {kind!r}, which is not agents, prompts or models"
            )
        matches = [f"{kind}/{name}"] if kind else by_name.get(name, [])
        if kind and matches[0] not in used:
            other = by_name.get(name)
            if other:
                raise Invalid(
                    f"versions: agent {agent} uses {name} as {other[0]}, not {matches[0]}: "
                    f"write {other[0]} = {number}"
                )
            raise Invalid(
                f"versions: agent {agent} does not use {matches[0]} (it uses {_listed(used)})"
            )
        if not matches:
            raise Invalid(
                f"versions: agent {agent} uses nothing called {name} (it uses {_listed(used)})"
            )
        if len(matches) > 1:
            raise Invalid(
                f"versions: {name} is the name of {' and of '.join(matches)}: write which, "
                f"like {matches[0]} = {number}"
            )
        resolved[matches[0]] = number
    return resolved
