"""The reference studio's agent editor bodies in spec terms (``definition_writes``).

The reference (spec 0.2.0) sends every field of ``GET /api/agents/{name}`` back, with
``side_a_backing``/``side_b_backing`` (``prompt``, ``human`` or ``handler``) and ``primary``.
A body that keeps what a stored 0.1.0 agent already says (its ``type`` implies the same
backings, ``primary`` stays true) leaves the agent in 0.1.0; a body that changes them
rewrites the stored agent in 0.2.0 first (``runtime.definitions.generations``: its
``maxSessionTurns`` turns become exchanges), then applies the edits. A handler backing takes
its handler from ``side_X_handler``; validation refuses a handler that is not registered.
"""

from __future__ import annotations

from typing import Any

from runtime.core.spec import SPEC_0_1, SPEC_0_2, AgentDefinition, agent_generation
from runtime.definitions.generations import agent_to_0_2

_UNSET_SIDE_VALUES: dict[str, Any] = {"stop_on_response": True, "manual_stop_condition": False}


def snake(definition: AgentDefinition) -> dict[str, Any]:
    """The stored agent as the editor's base: snake_case, defaults left out (so a 0.1.0
    agent shows no 0.2.0 key), ``type`` only where the agent is written with it."""
    data: dict[str, Any] = definition.model_dump(
        mode="json", exclude_none=True, exclude_defaults=True
    )
    if definition.spec == SPEC_0_2:
        data.pop("type", None)
    return data


def echoed(field: str, value: Any) -> bool:
    """A side field the studio sent back unset (for a person's or a handler's side, which
    have none)."""
    return value in (None, "", [], {}) or _UNSET_SIDE_VALUES.get(field, object()) == value


def _implied(base: dict[str, Any]) -> dict[str, str]:
    """The backings the stored agent has now (none for a new one)."""
    if not base:
        return {}
    spec, _ = agent_generation(base)
    if spec == SPEC_0_1:
        return {"a": "prompt", "b": "prompt" if base.get("type") == "dual_ai" else "human"}
    out = {}
    for side in ("a", "b"):
        config = base.get(f"side_{side}") or {}
        human, handler = config.get("human"), config.get("handler")
        out[side] = "human" if human else ("handler" if handler is not None else "prompt")
    return out


def _as_0_2(base: dict[str, Any]) -> dict[str, Any]:
    """A stored 0.1.0 agent rewritten in 0.2.0 (raises ``NotExpressible``)."""
    camel = AgentDefinition.model_validate(base).dump()
    return snake(AgentDefinition.model_validate(agent_to_0_2(camel)[0]))


def env_alias(body: dict[str, Any]) -> dict[str, Any]:
    """The reference sends ``env`` and its old name ``tenvs`` alike (agents and prompts): one
    value is ``env``; two different ones stay, for validation to refuse."""
    body = dict(body)
    if "tenvs" in body and ("env" not in body or body["env"] == body["tenvs"]):
        body["env"] = body.pop("tenvs")
    return body


def _back(base: dict[str, Any], side: str, backing: str, body: dict[str, Any]) -> None:
    key = f"side_{side}"
    current = dict(base.get(key) or {})
    if backing == "human":
        label = current.get("label")
        base[key] = {"human": True, **({"label": label} if label else {})}
    elif backing == "handler":
        label = current.get("label")
        handler = body.get(f"{key}_handler") or current.get("handler") or ""
        base[key] = {"handler": handler, **({"label": label} if label else {})}
    else:
        current.pop("human", None)
        current.pop("handler", None)
        base[key] = current


def _drop_echoes(body: dict[str, Any], stored: dict[str, Any], backings: dict[str, str]) -> None:
    """Fields the editor sent back as the stored agent had them, which the 0.2.0 shape says
    otherwise: the prompt of a side now a person's, a 0.1.0 turn count (now exchanges)."""
    for side, backing in backings.items():
        old = (stored.get(f"side_{side}") or {}).get("prompt")
        for key in (f"side_{side}_agent_prompt", f"side_{side}_agent_prompt_name"):
            if backing in ("human", "handler") and key in body and body[key] == old:
                body.pop(key)
    if stored.get("type") and body.get("max_session_turns") == stored.get("max_session_turns"):
        body.pop("max_session_turns", None)


def studio_body(
    body: dict[str, Any], base: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``body`` without the keys settled here, and the base its fields then apply to."""
    body, base = dict(body), dict(base)
    backings = {
        side: str(body.pop(f"side_{side}_backing"))
        for side in ("a", "b")
        if body.get(f"side_{side}_backing") is not None
    }
    primary = body.pop("primary", None)
    body = env_alias(body)
    changes = any(_implied(base).get(side) != backing for side, backing in backings.items())
    to_0_2 = changes or primary is False or (not base and bool(backings))
    stored = base
    if base and agent_generation(base)[0] == SPEC_0_2:
        to_0_2 = True
    elif to_0_2 and base:
        base = _as_0_2(base)
    if not to_0_2:
        return body, base  # echoed backings and primary: true, as the 0.1.0 agent says
    _drop_echoes(body, stored, backings)
    for side, backing in backings.items():
        _back(base, side, backing, body)
    if primary is not None:
        base["primary"] = primary
    # 0.2.0 has no ``type``: the one the listing shows is dropped when the sides say the same.
    people = [s for s in ("a", "b") if (base.get(f"side_{s}") or {}).get("human")]
    if body.get("type") == ("ai_human" if people else "dual_ai"):
        body.pop("type")
    return body, base


def drop_empty_side_b(data: dict[str, Any]) -> None:
    """A side B with nothing behind it (the studio's empty fields) is no side B."""
    side = data.get("side_b")
    if not isinstance(side, dict) or side.get("prompt") or side.get("human"):
        return
    if side.get("handler") is None:
        data.pop("side_b")
