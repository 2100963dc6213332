"""A definition save: validate a batch against the database plus the batch, write it all or
nothing, and record each changed agent, prompt and model as its next version.

The HTTP API (``writes``), ``import_definitions`` (``files``), the demo, saved drafts and
restores (``restore``: an old version saved again) go through ``save_definitions``. The
studio's forms validate the same definition with the same rules (``forms.definition_check``)
and let the admin write the rows, recording the version in ``admin.versions`` (issue #53: to be
brought onto this path). It builds on ``rows`` (rows ↔ definitions, validation) and
``versions`` (the version records); neither imports it back.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from agents_app.base.errors import Invalid
from agents_app.models import Agent, DefinitionVersion, LanguageModel, McpServer, Prompt
from agents_app.services.definitions import versions as definition_versions
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
from runtime.core.spec import AgentDefinition, ModelDefinition, PromptDefinition
from runtime.definitions.validation import DefinitionError
from runtime.mcp.servers import McpServerDefinition


@dataclass
class SaveReport:
    created: list[str]
    updated: list[str]
    # What the user should know though nothing failed (an MCP server not listed on import).
    notes: list[str] = field(default_factory=list)


def save_definitions(
    items: Sequence[tuple[str, AnyDefinition]],
    *,
    strict_code_names: bool | None = None,
    author: Any = None,
    note: str = "",
    source: str = "import",
) -> SaveReport:
    """Validate every definition against the database plus the batch, then save all or nothing.

    ``items`` pairs a source label (a file path, a form) with a definition. Raises
    ``DefinitionsInvalid`` with every error of every item; nothing is written then.
    Each agent, prompt and model that changed gets its next version (``author``, ``note``,
    ``source``: see ``definition_versions``), in the same transaction.
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
        for server in servers:
            server_from_definition(server)
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
