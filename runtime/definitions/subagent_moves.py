"""Moving 0.1.0 prompt-entry subagents onto the sides of the agents that run the prompt.

0.1.0 declares a subagent in a prompt's ``tools`` (``blocking``/``resumable``); 0.2.0 on the
side (``sideX.subagents[]``, rows A4/A5). A move spans files: the entry leaves the prompt and
a relationship joins every side, in the folder, that runs that prompt. ``plan_moves`` works on
the JSON as written (``convert_definitions``) and says, in one sentence per change, what moved
and what stays (``kept``): an entry 0.2.0 cannot say stays in the prompt, which keeps working
the 0.1.0 way for every agent running it (a prompt is read as 0.1.0 unless it has ``variables``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from runtime.core.spec import agent_generation

# Entry keys a 0.2.0 relationship says the same way.
_SAME = ("immediate", "optional", "scopedEnv", "hidden", "parentCommunication")


@dataclass
class Moves:
    drops: dict[str, list[str]] = field(default_factory=dict)  # prompt → entry names
    adds: dict[str, dict[str, list[dict[str, Any]]]] = field(default_factory=dict)  # agent → side
    changes: dict[tuple[str, str], list[str]] = field(default_factory=dict)  # (kind, name)
    kept: list[str] = field(default_factory=list)


def is_subagent_entry(entry: Any) -> bool:
    """A 0.1.0 tool entry that declares a subagent (``blocking`` or a ``resumable`` object)."""
    return isinstance(entry, dict) and (
        "blocking" in entry or isinstance(entry.get("resumable"), dict)
    )


def relationship(entry: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The entry as a 0.2.0 relationship, and what of it 0.2.0 cannot say (field names)."""
    out: dict[str, Any] = {"agent": entry["name"]}
    if entry.get("blocking", True):  # 0.1.0's default is blocking, 0.2.0's is not
        out["blocking"] = True
    lost: list[str] = []
    resumable = entry.get("resumable")
    if isinstance(resumable, dict):
        side = resumable.get("receives_messages", resumable.get("receivesMessages", "side_a"))
        if side != "side_a":
            lost.append("resumable.receives_messages")
        if resumable.get("maxInstances") is not None:
            out["maxInstances"] = resumable["maxInstances"]
    for key in _SAME:
        if key in entry:
            out[key] = entry[key]
    lost += [k for k in entry if k not in {"name", "blocking", "resumable", *_SAME}]
    return out, lost


def _side_prompts(data: dict[str, Any]) -> dict[str, str]:
    """The agent's prompt-backed sides: side key → prompt name."""
    spec, _ = agent_generation(data)
    keys = ["sideA"]
    if spec != "0.1.0" or data.get("type") == "dual_ai":
        keys.append("sideB")
    out = {}
    for key in keys:
        side = data.get(key)
        if not isinstance(side, dict) or side.get("human") or side.get("handler") is not None:
            continue
        if isinstance(side.get("prompt"), str) and side["prompt"]:
            out[key] = side["prompt"]
    return out


def plan_moves(prompts: dict[str, dict[str, Any]], agents: dict[str, dict[str, Any]]) -> Moves:
    """Which entries leave which prompts, and which relationships join which agents' sides."""
    moves = Moves()
    users: dict[str, list[tuple[str, str]]] = {}
    for agent_name, data in agents.items():
        for key, prompt in _side_prompts(data).items():
            users.setdefault(prompt, []).append((agent_name, key))
    for prompt_name, data in prompts.items():
        entries = [e for e in data.get("tools") or [] if is_subagent_entry(e)]
        if not entries:
            continue
        sides = users.get(prompt_name, [])
        for entry in entries:
            where = f"prompts/{prompt_name}: tools entry {entry['name']}"
            if not sides:
                moves.kept.append(
                    f"{where} stays in the prompt (a 0.1.0 subagent, run as before): no agent "
                    "in this folder runs the prompt on a side, so there is no side to move it to."
                )
                continue
            rel, lost = relationship(entry)
            if lost:
                moves.kept.append(
                    f"{where} stays in the prompt (a 0.1.0 subagent, run as before): "
                    f"{', '.join(lost)} cannot be written on a 0.2.0 relationship "
                    "(sideX.subagents)."
                )
                continue
            moves.drops.setdefault(prompt_name, []).append(entry["name"])
            targets = ", ".join(f"{a}.{k}" for a, k in sides)
            note = _behaviour_note(entry)
            moves.changes.setdefault(("prompts", prompt_name), []).append(
                f"tools entry {entry['name']} (a 0.1.0 subagent) → {targets}.subagents{note}"
            )
            for agent_name, key in sides:
                moves.adds.setdefault(agent_name, {}).setdefault(key, []).append(rel)
                moves.changes.setdefault(("agents", agent_name), []).append(
                    f"{key}.subagents += {rel} (from prompt {prompt_name}'s tools){note}"
                )
    return moves


def _behaviour_note(entry: dict[str, Any]) -> str:
    notes = []
    if not isinstance(entry.get("resumable"), dict):
        notes.append(
            f"the model now starts it with subagent_create instead of calling {entry['name']}"
        )
    if entry.get("hidden"):
        notes.append("hidden now also keeps it out of subagent_create")
    return f" ({'; '.join(notes)})" if notes else ""


def apply_to_prompt(data: dict[str, Any], names: list[str]) -> dict[str, Any]:
    """The prompt without the moved entries (the others stay as written)."""
    tools = [
        e for e in data.get("tools") or [] if not (is_subagent_entry(e) and e["name"] in names)
    ]
    out = dict(data)
    if tools:
        out["tools"] = tools
    else:
        out.pop("tools", None)
    return out


def apply_to_agent(data: dict[str, Any], adds: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """The (0.2.0) agent with the moved relationships on its sides."""
    out = dict(data)
    for key, relationships in adds.items():
        side = dict(out.get(key) or {})
        side["subagents"] = [*side.get("subagents", []), *relationships]
        out[key] = side
    return out
