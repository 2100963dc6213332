"""A definition written for one spec generation, rewritten for the other (0.1.0 ↔ 0.2.0).

Both generations load into one internal model (``runtime.core.spec``); these functions work
on the JSON as written, so a conversion changes only what the generations spell
differently and leaves every other key as the author wrote it. Each returns the new object
and one sentence per change; what the target generation cannot say raises
``NotExpressible`` naming the field (export and ``convert_definitions`` refuse that file
rather than write something that would run differently).

What differs (docs/definitions.md, "Two generations"):

- agents: 0.1.0's ``type`` becomes side backings (``ai_human``: ``sideB: {human: true}``;
  ``dual_ai``: two prompt sides); ``tenvs`` is ``env``; ``maxSessionTurns`` counts turns in
  0.1.0 and exchanges (a turn of each side) in 0.2.0, so N turns are N/2 exchanges;
- prompts: ``tenvs`` is ``env``; ``exposeAsTool`` is dropped (every prompt is a tool);
  ``variables`` exist in 0.2.0 only;
- subagents: 0.1.0 prompt tool entries (``blocking``/``resumable``), 0.2.0 ``sideX.subagents``;
  the move spans files (``runtime.definitions.subagent_moves``, to 0.2.0 only);
- models: ``vision``/``functionCalling``/``structuredOutputs`` are ``supportsImages``/
  ``supportsToolCalls``/``supportsJsonMode``; four capabilities exist in 0.2.0 only.
"""

from __future__ import annotations

from typing import Any

from runtime.core.spec import (
    AGENT_0_2_ONLY,
    CAPABILITIES_0_2_ONLY,
    CAPABILITY_ALIASES,
    SPEC_0_1,
    SPEC_0_2,
    SpecVersion,
    agent_generation,
)

Converted = tuple[dict[str, Any], list[str]]


class NotExpressible(Exception):
    """The definition cannot be written in the target generation; ``path`` names the field."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path, self.message = path, message


def convert(kind: str, data: dict[str, Any], target: SpecVersion) -> Converted:
    """``data`` (one definition of ``kind``: agents, prompts, models, mcp) in ``target``."""
    if kind == "agents":
        return agent_to_0_2(data) if target == SPEC_0_2 else agent_to_0_1(data)
    if kind == "prompts":
        return prompt_to(data, target)
    if kind == "models":
        return model_to(data, target)
    return dict(data), []


# --- agents ---------------------------------------------------------------------------------


def _renamed(data: dict[str, Any], old: str, new: str) -> dict[str, Any]:
    """``data`` with key ``old`` called ``new``, in the same place."""
    return {(new if key == old else key): value for key, value in data.items()}


def _with_after(data: dict[str, Any], after: str, key: str, value: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in data.items():
        out[k] = v
        if k == after:
            out[key] = value
    if key not in out:
        out[key] = value
    return out


def agent_to_0_2(data: dict[str, Any]) -> Converted:
    out, changes = dict(data), []
    spec, _ = agent_generation(out)
    if spec == SPEC_0_1:
        kind = out.pop("type", "ai_human")
        if kind == "dual_ai":
            changes.append("type dual_ai → two prompt-backed sides (type removed)")
            turns = out.get("maxSessionTurns")
            if isinstance(turns, int) and not isinstance(turns, bool):
                if turns % 2:
                    raise NotExpressible(
                        "maxSessionTurns",
                        f"{turns} turns cannot be written in 0.2.0, which counts exchanges "
                        "(a turn of each side): an odd number of turns ends in the middle of "
                        "one. Set an even number first, or keep this file in 0.1.0.",
                    )
                out["maxSessionTurns"] = turns // 2
                changes.append(
                    f"maxSessionTurns {turns} (turns) → {turns // 2} (exchanges, a turn of "
                    "each side)"
                )
        else:
            if "sideB" in out:
                raise NotExpressible(
                    "sideB",
                    "An ai_human agent has no side B in 0.1.0 (the person is side B); "
                    "remove it, or set type to dual_ai.",
                )
            out = _with_after(out, "sideA", "sideB", {"human": True})
            changes.append("type ai_human → sideB: {human: true} (type removed)")
    if "tenvs" in out:
        if "env" in out:
            raise NotExpressible("tenvs", "tenvs is the old name of env; give one of them.")
        out = _renamed(out, "tenvs", "env")
        changes.append("tenvs → env")
    return out, changes


def agent_to_0_1(data: dict[str, Any]) -> Converted:
    out = dict(data)
    changes: list[str] = []
    spec, _ = agent_generation(out)
    if spec == SPEC_0_2:
        for key in ("sideA", "sideB"):
            side = out.get(key)
            if isinstance(side, dict) and side.get("subagents"):
                raise NotExpressible(
                    f"{key}.subagents",
                    "0.1.0 declares subagents in the prompt's tools (blocking/resumable "
                    "entries), which every agent running that prompt shares; move them there "
                    "by hand, or keep this file in 0.2.0.",
                )
        out, changes = _sides_to_type(out)
    if "env" in out:
        if "tenvs" in out:
            raise NotExpressible("tenvs", "tenvs is the old name of env; give one of them.")
        out = _renamed(out, "env", "tenvs")
        changes.append("env → tenvs")
    return out, changes


def _backing(side: Any) -> str:
    if not isinstance(side, dict):
        return "none"
    if side.get("human"):
        return "human"
    return "handler" if side.get("handler") is not None else "prompt"


def _sides_to_type(data: dict[str, Any]) -> Converted:
    out, changes = dict(data), []
    side_a, side_b = _backing(out.get("sideA")), _backing(out.get("sideB"))
    for key, backing in (("sideA", side_a), ("sideB", side_b)):
        if backing == "handler":
            raise NotExpressible(f"{key}.handler", "0.1.0 has no handler-backed sides.")
    if side_a == "human":
        raise NotExpressible(
            "sideA.human",
            "A person on side A cannot be written in 0.1.0, where the person of an ai_human "
            "agent is always side B.",
        )
    if side_b == "human":
        extra = sorted(k for k in out["sideB"] if k not in ("human",))
        if extra:
            raise NotExpressible(
                f"sideB.{extra[0]}",
                "0.1.0 has no place for settings of the person's side (side B of an "
                "ai_human agent).",
            )
        kind = "ai_human"
        out.pop("sideB")
        changes.append("sideB: {human: true} → type ai_human")
        if "maxSessionTurns" in out:
            raise NotExpressible(
                "maxSessionTurns",
                "0.1.0 counts maxSessionTurns for dual_ai agents only; an agent with a person "
                "cannot keep it.",
            )
    else:
        kind = "dual_ai"
        changes.append("two prompt-backed sides → type dual_ai")
        turns = out.get("maxSessionTurns")
        if isinstance(turns, int) and not isinstance(turns, bool):
            out["maxSessionTurns"] = turns * 2
            changes.append(f"maxSessionTurns {turns} (exchanges) → {turns * 2} (turns)")
    if out.get("primary") is False:
        raise NotExpressible(
            "primary", "0.1.0 has no primary: every agent is offered in the agent picker."
        )
    if "primary" in out:
        out.pop("primary")
        changes.append("primary: true removed (every 0.1.0 agent is primary)")
    if out.get("parentHooks"):
        raise NotExpressible(
            "parentHooks",
            "0.1.0 has no parentHooks: a child agent cannot require hooks on its parents "
            "there; keep this agent in 0.2.0.",
        )
    out.pop("parentHooks", None)  # none required: nothing to say in 0.1.0
    for key in AGENT_0_2_ONLY:
        if key in out:
            raise NotExpressible(key, f"0.1.0 has no {key}.")
    name = out.pop("name", None)
    head = {"name": name} if name is not None else {}
    return {**head, "type": kind, **out}, changes


# --- prompts and models ---------------------------------------------------------------------


def prompt_to(data: dict[str, Any], target: SpecVersion) -> Converted:
    out, changes = dict(data), []
    if "tenvs" in out:
        if "env" in out:
            raise NotExpressible("tenvs", "tenvs is the old name of env; give one of them.")
        out = _renamed(out, "tenvs", "env")
        changes.append("tenvs → env")
    if "exposeAsTool" in out:
        if out["exposeAsTool"] is False:
            raise NotExpressible(
                "exposeAsTool",
                "Every prompt can be named as a tool, so exposeAsTool: false has no effect; "
                "remove it.",
            )
        out.pop("exposeAsTool")
        changes.append("exposeAsTool removed (every prompt is a tool)")
    if target == SPEC_0_1 and "variables" in out:
        raise NotExpressible("variables", "0.1.0 prompts declare no variables.")
    return out, changes


def model_to(data: dict[str, Any], target: SpecVersion) -> Converted:
    caps = data.get("capabilities")
    if not isinstance(caps, dict):
        return dict(data), []
    pairs = CAPABILITY_ALIASES.items()
    names = dict(pairs) if target == SPEC_0_2 else {new: old for old, new in pairs}
    new_caps, changes = dict(caps), []
    for old, new in names.items():
        if old not in new_caps:
            continue
        if new in new_caps:
            if new_caps[new] != new_caps[old]:
                raise NotExpressible(
                    f"capabilities.{old}", f"{old} and {new} name one capability; give one."
                )
            new_caps.pop(old)
        else:
            new_caps = _renamed(new_caps, old, new)
        changes.append(f"capabilities.{old} → {new}")
    if target == SPEC_0_1:
        for key in CAPABILITIES_0_2_ONLY:
            if key in new_caps:
                raise NotExpressible(f"capabilities.{key}", f"0.1.0 models have no {key}.")
    return {**data, "capabilities": new_caps}, changes
