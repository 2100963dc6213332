"""A definition save: validate a batch against the database plus the batch, write it all or
nothing, and record each changed agent, prompt and model as its next version.

Every writer goes through ``save_definitions``: the studio's forms (``studio_save``), the
HTTP API (``writes``), ``import_definitions`` (``files``), the demo, saved drafts and restores
(``restore``: an old version saved again); tests/agents_app/services/test_one_save_path.py
holds it. It builds on ``rows`` (rows ↔ definitions, validation) and ``versions`` (the
version records); neither imports it back.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from agents_app.base.errors import Invalid
from agents_app.models import (
    A2aAgent,
    Agent,
    DefinitionVersion,
    LanguageModel,
    McpServer,
    Prompt,
)
from agents_app.services.definitions import versions as definition_versions
from agents_app.services.definitions.a2a_agents import remote_from_definition
from agents_app.services.definitions.mcp_servers import server_from_definition
from agents_app.services.definitions.rows import (
    AnyDefinition,
    DefinitionsInvalid,
    agent_from_definition,
    build_catalog,
    link_model_fallbacks,
    link_prompt_parts,
    model_from_definition,
    prompt_from_definition,
    validate_definition,
)
from agents_app.services.definitions.versions import (
    Author,
    current_dump,
    latest,
    parse_definition,
    version,
)
from runtime.core.a2a_agents import A2aAgentDefinition
from runtime.core.spec import AgentDefinition, ModelDefinition, PromptDefinition
from runtime.definitions.validation import DefinitionError
from runtime.mcp.servers import McpServerDefinition


@dataclass
class SaveReport:
    created: list[str]
    updated: list[str]
    # What the user should know though nothing failed (an MCP server not listed on import).
    notes: list[str] = field(default_factory=list)
    # Knowledge documents an import stored or changed: the caller enqueues their ingestion.
    queued_documents: list[int] = field(default_factory=list)


def save_definitions(
    items: Sequence[tuple[str, AnyDefinition]],
    *,
    strict_code_names: bool | None = None,
    author: Any = None,
    note: str = "",
    source: str = "import",
    after_write: Callable[[], None] | None = None,
) -> SaveReport:
    """Validate every definition against the database plus the batch, then save all or nothing.

    ``items`` pairs a source label (a file path, a form) with a definition. Raises
    ``DefinitionsInvalid`` with every error of every item; nothing is written then.
    Each agent, prompt and model that changed gets its next version (``author``, ``note``,
    ``source``: see ``definition_versions``), in the same transaction. ``after_write`` runs
    in that transaction once the rows are written and before the versions are recorded: the
    studio saves there what a form holds beside the definition (``studio_save``).
    """
    defs = [d for _, d in items]
    catalog = build_catalog(defs, strict_code_names=strict_code_names)
    errors: dict[str, list[DefinitionError]] = {}
    for label, d in items:
        errs = validate_definition(d, catalog)
        if errs:
            errors[label] = errs
    if errors:
        raise DefinitionsInvalid(errors)
    existing = {
        **{("mcp", n): True for n in McpServer.objects.values_list("name", flat=True)},
        **{("a2a", n): True for n in A2aAgent.objects.values_list("name", flat=True)},
        **{("models", n): True for n in LanguageModel.objects.values_list("name", flat=True)},
        **{("prompts", n): True for n in Prompt.objects.values_list("name", flat=True)},
        **{("agents", n): True for n in Agent.objects.values_list("name", flat=True)},
    }
    report = SaveReport(created=[], updated=[])
    with transaction.atomic():
        models_ = [d for d in defs if isinstance(d, ModelDefinition)]
        prompts = [d for d in defs if isinstance(d, PromptDefinition)]
        agents = [d for d in defs if isinstance(d, AgentDefinition)]
        servers = [d for d in defs if isinstance(d, McpServerDefinition)]
        remotes = [d for d in defs if isinstance(d, A2aAgentDefinition)]
        for server in servers:
            server_from_definition(server)
        for remote in remotes:
            remote_from_definition(remote)
        for m in models_:
            model_from_definition(m)
        for m in models_:
            link_model_fallbacks(m)
        for p in prompts:
            prompt_from_definition(p)
        for p in prompts:
            link_prompt_parts(p)
        for a in agents:
            agent_from_definition(a)
        if after_write is not None:
            after_write()
        definition_versions.record_many(
            [("models", d.name) for d in models_]
            + [("prompts", d.name) for d in prompts]
            + [("agents", d.name) for d in agents],
            author=author,
            note=note,
            source=source,
        )
    groups: tuple[tuple[str, Sequence[AnyDefinition]], ...] = (
        ("mcp", servers),
        ("a2a", remotes),
        ("models", models_),
        ("prompts", prompts),
        ("agents", agents),
    )
    for kind, group in groups:
        for d in group:
            (report.updated if (kind, d.name) in existing else report.created).append(
                f"{kind}/{d.name}"
            )
    return report


def restore(kind: str, name: str, number: int, *, author: Author = None) -> DefinitionVersion:
    """Save version ``number`` again as the definition; the restore is itself a new version
    ("Restored version N"). Refused (``Invalid``) when it no longer validates, e.g. the model
    it names was deleted since, or when it is what is saved already."""
    old = version(kind, name, number)
    if current_dump(kind, name) == old.definition:
        raise Invalid(f"Version {number} is what is saved now: nothing to restore")
    try:
        defn = parse_definition(kind, old.definition)
        save_definitions(
            [(f"{kind}/{name}", defn)],
            author=author,
            note=f"Restored version {number}",
            source=DefinitionVersion.Source.RESTORE,
        )
    except DefinitionsInvalid as exc:
        reasons = "; ".join(str(e) for errs in exc.errors.values() for e in errs)
        raise Invalid(f"Version {number} cannot be restored: {reasons}") from None
    newest = latest(kind, name)
    assert newest is not None
    return newest


# What a definition holds that the studio's forms do not show, kept as stored when the form
# leaves it unset: packaging metadata, parentHooks and prompt variables come from files,
# provider tools from the API; a form that does not show a field must not erase it.
KEPT_FROM_ROW: dict[str, tuple[str, ...]] = {
    "agents": ("package_name", "version", "author", "license", "parent_hooks"),
    "prompts": ("variables",),
    "models": ("provider_tools",),
}
ROW_MODELS: dict[str, type[Agent] | type[Prompt] | type[LanguageModel]] = {
    "agents": Agent,
    "prompts": Prompt,
    "models": LanguageModel,
}


def studio_save(
    kind: str,
    definition: AgentDefinition | PromptDefinition | ModelDefinition,
    *,
    renamed_from: str | None,
    author: Author,
    note: str,
    after_write: Callable[[], None] | None = None,
) -> SaveReport:
    """A studio form's save, through ``save_definitions`` like every other writer.

    The form built ``definition`` from its fields and rows and validated it (its ``clean``).
    A rename moves the row first, so references (foreign keys) follow it. What the form does
    not show is kept as stored (``KEPT_FROM_ROW``); env values are kept too (secrets never
    reach a form): the studio's env rows are written by ``after_write``.
    """
    with transaction.atomic():
        rows = ROW_MODELS[kind].objects
        if renamed_from and renamed_from != definition.name:
            rows.filter(name=renamed_from).update(name=definition.name)
        stored = current_dump(kind, definition.name)
        if stored is not None:
            definition = _with_kept_values(kind, definition, parse_definition(kind, stored))
        return save_definitions(
            [(f"{kind}/{definition.name}", definition)],
            author=author,
            note=note,
            source=DefinitionVersion.Source.ADMIN,
            after_write=after_write,
        )


def _with_kept_values(kind: str, definition: Any, stored: Any) -> Any:
    kept = {
        field: getattr(stored, field)
        for field in KEPT_FROM_ROW[kind]
        if getattr(definition, field) is None and getattr(stored, field) is not None
    }
    env = getattr(stored, "env", None)
    if env and getattr(definition, "env", None) is None:
        kept["env"] = dict.fromkeys(env)  # null keeps each value as stored
    return definition.model_copy(update=kept) if kept else definition
