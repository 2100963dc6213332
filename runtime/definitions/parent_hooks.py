"""Save-time rules for spec 0.2.0 ``parentHooks`` (row A7): hooks a child agent requires on
every direct parent side that declares it.

The reference fails closed on a requirement it cannot honour (``ParentHookResolver.ts``:
a missing hook, a blank reason, an unknown stage, a repeated hook, a child not exposed as a
tool), at run time. Here the same faults are refused when the child is saved (file import,
the definition API and the studio alike, through ``validate_agent``), each naming
``parentHooks[i].<field>``; a hook removed from code later fails the parent's step
(``runtime.tools.parent_hooks``). User hooks (spec 0.2.0 §7) run in a person's scope and
are refused here, as the reference refuses them (``ParentHookResolver.ts:13-17``).
"""

from __future__ import annotations

from runtime.core.definition_errors import Catalog, DefinitionError
from runtime.core.spec import AgentDefinition
from runtime.core.user_scope import USER_HOOK_NAMES


def parent_hook_errors(agent: AgentDefinition, catalog: Catalog | None) -> list[DefinitionError]:
    """What is wrong with ``agent.parent_hooks`` (nothing when it lists none)."""
    requirements = agent.parent_hooks or []
    if not requirements:
        return []
    if not agent.expose_as_tool:
        return [
            DefinitionError(
                "parentHooks",
                "Only an agent other agents can start as a subagent (exposeAsTool: true) may "
                "require hooks on its parents; set exposeAsTool or remove parentHooks.",
            )
        ]
    errs: list[DefinitionError] = []
    seen: set[str] = set()
    strict = catalog is not None and catalog.strict_code_names
    for index, requirement in enumerate(requirements):
        path = f"parentHooks[{index}]"
        hook = requirement.hook.strip()
        if not hook:
            errs.append(DefinitionError(f"{path}.hook", "Name the hook this agent requires."))
        elif hook in seen:
            errs.append(
                DefinitionError(
                    f"{path}.hook", f"Hook '{hook}' is required twice; list each hook once."
                )
            )
        elif hook in USER_HOOK_NAMES or (catalog is not None and hook in catalog.user_hooks):
            errs.append(
                DefinitionError(
                    f"{path}.hook",
                    f"Hook '{hook}' is a user hook (user_value_changed, user_client_attached, "
                    "user_client_detached): it runs in a person's scope, never on a parent "
                    "thread, so it cannot be required as a parent hook.",
                )
            )
        elif strict and catalog is not None and hook not in catalog.hooks:
            errs.append(
                DefinitionError(
                    f"{path}.hook",
                    f"Hook '{hook}' is not registered: a required parent hook must exist in "
                    "code (agents/hooks/), or every parent of this agent would fail.",
                )
            )
        seen.add(hook)
        if not requirement.reason.strip():
            errs.append(
                DefinitionError(
                    f"{path}.reason",
                    "Say why the parents need this hook: the reason is shown to whoever "
                    "adds this agent as a subagent.",
                )
            )
    return errs
