"""Save-time rules for spec 0.2.0 subagent relationships (``sideX.subagents[]``, rows A4/A5).

Called from ``runtime.definitions.validation.validate_agent``, so file import, the definition
API and the studio refuse alike. What a relationship may say but this platform cannot honour is
refused with the field named (the object form of ``immediate``, the ``init*Property`` options),
never accepted and ignored.
"""

from __future__ import annotations

from runtime.core.definition_errors import Catalog, DefinitionError
from runtime.core.spec import (
    AgentDefinition,
    PromptDefinition,
    SideConfig,
    SubagentRelationship,
)

# A 0.1.0 tool entry's subagent keys (``receives_messages`` lives inside ``resumable``),
# refused on the prompts of a 0.2.0 agent.
_ENTRY_KEYS = ("resumable", "blocking", "hidden", "immediate")
MIGRATION = (
    "the tool's name becomes as, the resumable wrapper is unwrapped (its maxInstances moves "
    "up), receives_messages is deleted"
)
_INIT_PROPERTIES = {
    "init_user_message_property": "initUserMessageProperty",
    "init_attachments_property": "initAttachmentsProperty",
    "init_agent_name_property": "initAgentNameProperty",
}
_NAME_MAX = 200  # Thread.relationship


def side_subagent_errors(agent: AgentDefinition, catalog: Catalog | None) -> list[DefinitionError]:
    errs: list[DefinitionError] = []
    for key, side in (("sideA", agent.side_a), ("sideB", agent.side_b)):
        if side is None:
            continue
        errs += _side_errors(key, side, catalog)
    return errs


def _side_errors(key: str, side: SideConfig, catalog: Catalog | None) -> list[DefinitionError]:
    if not side.subagents:
        return []
    if side.backing != "prompt":
        who = "A person" if side.backing == "human" else "A handler"
        return [
            DefinitionError(
                f"{key}.subagents",
                f"{who} takes this side's turns, and only a prompt's model can create subagents; "
                "move these relationships to the side backed by a prompt.",
            )
        ]
    errs: list[DefinitionError] = []
    seen: set[str] = set()
    for index, relationship in enumerate(side.subagents):
        path = f"{key}.subagents[{index}]"
        errs += _relationship_errors(path, relationship, catalog)
        name = relationship.name
        if name in seen:
            errs.append(
                DefinitionError(
                    f"{path}.as",
                    f"Two relationships of this side are called '{name}': give one another "
                    "name with as (the model picks a relationship by its name).",
                )
            )
        seen.add(name)
    return errs


def _relationship_errors(
    path: str, relationship: SubagentRelationship, catalog: Catalog | None
) -> list[DefinitionError]:
    errs: list[DefinitionError] = []
    target = relationship.agent.strip()
    if not target:
        errs.append(DefinitionError(f"{path}.agent", "Name the agent this relationship starts."))
    elif catalog is not None and target not in catalog.agents:
        errs.append(DefinitionError(f"{path}.agent", f"Agent '{target}' does not exist."))
    elif catalog is not None and not catalog.agent_shapes.get(target, ("", False))[1]:
        errs.append(
            DefinitionError(
                f"{path}.agent",
                f"Agent '{target}' is not exposed as a tool: a subagent target needs "
                "exposeAsTool: true (and a toolDescription) on that agent.",
            )
        )
    if relationship.as_ is not None and not relationship.as_.strip():
        errs.append(DefinitionError(f"{path}.as", "as, when given, must not be empty."))
    if len(relationship.name) > _NAME_MAX:
        errs.append(DefinitionError(f"{path}.as", f"At most {_NAME_MAX} characters."))
    if isinstance(relationship.immediate, dict):
        errs.append(
            DefinitionError(
                f"{path}.immediate",
                "The object form of immediate ({nameEnv, descriptionEnv, scopedEnv}) is not "
                "supported here; write immediate: true (the relationship's own scopedEnv "
                "applies).",
            )
        )
    for attr, camel in _INIT_PROPERTIES.items():
        if getattr(relationship, attr) is not None:
            errs.append(
                DefinitionError(
                    f"{path}.{camel}",
                    "subagent_create gives the child its first message, its files and its "
                    "name through its own message, attachments and name arguments, so "
                    f"{camel} has nothing to name here; remove it.",
                )
            )
    return errs


def old_subagent_entry_errors(prompt: PromptDefinition) -> list[DefinitionError]:
    """A prompt written in 0.2.0 (it says ``variables`` or ``exposeAsTool``, which 0.1.0 has
    not) whose tool entries still declare subagents the 0.1.0 way: the reference refuses it
    with its migration sentence. A prompt without those keys is read as 0.1.0: its entries
    keep working for every agent that runs it."""
    if prompt.variables is None and prompt.expose_as_tool is None:
        return []
    errs: list[DefinitionError] = []
    for index, entry in enumerate(prompt.tools or []):
        if isinstance(entry, str):
            continue
        keys = [k for k in _ENTRY_KEYS if getattr(entry, k) is not None]
        if keys:
            errs.append(
                DefinitionError(
                    f"tools.{index}.{keys[0]}",
                    f"'{entry.name}' declares a subagent the spec 0.1.0 way ({', '.join(keys)}), "
                    "and this prompt is written in spec 0.2.0 (it has variables or "
                    "exposeAsTool), which declares subagents on the agent's side: move it to "
                    f"sideX.subagents of the agents that run this prompt ({MIGRATION}).",
                )
            )
    return errs
