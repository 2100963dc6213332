"""Knowledge bases as definitions: the one shape the API, ``import_definitions`` and
``export_definitions`` read and write (docs/knowledge.md), and the writes behind it.

A definition is ``{name, description, embeddingModel, state, audience}``: ``embeddingModel``
is ``local`` or a model definition's name (``embedding.py``); ``state`` is ``published`` or
``draft``; ``audience`` the names of the groups it is offered to (empty: everyone). Unknown
fields are refused with a sentence naming them. Changing the embedding model re-embeds every
document: their passages are deleted and they are queued again (the caller enqueues the
returned ids after the commit: ``orchestration/knowledge_ingest.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.contrib.auth.models import Group
from django.db import transaction
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agents_app.base.errors import Conflict, Invalid, NotFound
from agents_app.models import PromptTool
from agents_app.models.knowledge import (
    LOCAL_ALIAS,
    LOCAL_EMBEDDING_MODEL,
    DocumentStatus,
    KnowledgeBase,
    KnowledgeChunk,
    KnowledgeDocument,
    KnowledgeState,
)
from agents_app.services.knowledge.documents import base_delete
from agents_app.services.knowledge.embedding import embedding_model_problem, normalised_model
from agents_app.services.knowledge.provider_embeddings import provider_problem
from runtime.core.definition_errors import check_name
from runtime.knowledge.names import PREFIX


class KnowledgeBaseDefinition(BaseModel):
    """A knowledge base as it is written in a definition file or an API body."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    name: str
    description: str = ""
    embedding_model: str = Field(default=LOCAL_ALIAS, alias="embeddingModel")
    state: KnowledgeState = KnowledgeState.PUBLISHED
    audience: list[str] = Field(default_factory=list)


def parse_definition(
    data: Any, *, models: Mapping[str, str] | None = None
) -> KnowledgeBaseDefinition:
    """``data`` as a definition, or ``Invalid`` with a sentence naming each wrong field.
    ``models``: model definitions (name → provider) saved together with it (an import)."""
    if not isinstance(data, dict):
        raise Invalid("A knowledge base definition must be an object.")
    try:
        definition = KnowledgeBaseDefinition.model_validate(data)
    except ValidationError as exc:
        raise Invalid(
            "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'body'}: "
                + ("is not a knowledge base field" if e["type"] == "extra_forbidden" else e["msg"])
                for e in exc.errors()[:5]
            )
        ) from None
    errors = check_name(definition.name)
    if errors:
        raise Invalid(errors[0].message)
    incoming = (models or {}).get(definition.embedding_model)
    if incoming is not None:
        problem = provider_problem(definition.embedding_model, incoming)
    else:
        problem = embedding_model_problem(definition.embedding_model)
    if problem:
        raise Invalid(f"embeddingModel: {problem}")
    return definition


def base_definition(base: KnowledgeBase) -> KnowledgeBaseDefinition:
    model = base.embedding_model
    return KnowledgeBaseDefinition(
        name=base.name,
        description=base.description,
        embedding_model=LOCAL_ALIAS if model == LOCAL_EMBEDDING_MODEL else model,
        state=KnowledgeState(base.state),
        audience=sorted(base.audience_groups.values_list("name", flat=True)),
    )


def _groups(names: list[str]) -> list[Group]:
    found = {g.name: g for g in Group.objects.filter(name__in=names)}
    missing = [n for n in names if n not in found]
    if missing:
        raise Invalid(f"audience: no group named {', '.join(repr(n) for n in missing[:5])}.")
    return [found[n] for n in names]


def base_save(
    definition: KnowledgeBaseDefinition, *, create: bool | None = None
) -> tuple[KnowledgeBase, list[int]]:
    """Create or update the base ``definition`` names (``create``: True refuses an existing
    one with 409, False a missing one with 404, None either). Returns the base and the
    documents queued to be embedded again (its embedding model changed)."""
    with transaction.atomic():
        base = KnowledgeBase.objects.select_for_update().filter(name=definition.name).first()
        if base is not None and create is True:
            raise Conflict(f"A knowledge base named {definition.name} exists: update it with PUT.")
        if base is None and create is False:
            raise NotFound(f"Knowledge base not found: {definition.name}")
        groups = _groups(definition.audience)
        model = normalised_model(definition.embedding_model)
        changed = base is not None and base.embedding_model != model
        base = base or KnowledgeBase(name=definition.name)
        base.description = definition.description
        base.embedding_model = model
        base.state = definition.state
        base.save()
        base.audience_groups.set(groups)
        queued = base_reembed(base=base) if changed else []
    return base, queued


def base_reembed(*, base: KnowledgeBase) -> list[int]:
    """Its embedding model changed: every document's passages go and it is queued again (the
    old vectors cannot be compared with the new model's queries). The ids to enqueue."""
    KnowledgeChunk.objects.filter(document__base=base).delete()
    documents = KnowledgeDocument.objects.filter(base=base)
    ids = list(documents.values_list("pk", flat=True))
    documents.update(
        status=DocumentStatus.QUEUED,
        failure="",
        claimed_at=None,
        chunk_count=0,
        chunks_embedded=0,
    )
    return ids


def base_remove(*, base: KnowledgeBase) -> None:
    """Delete ``base``; refused (409) while a prompt lists it as ``knowledge:<name>``."""
    users = sorted(
        set(
            PromptTool.objects.filter(name=PREFIX + base.name).values_list(
                "prompt__name", flat=True
            )
        )
    )
    if users:
        raise Conflict(
            f"Knowledge base {base.name} is listed by prompt(s) {', '.join(users[:10])}: "
            "remove it from their tools first."
        )
    base_delete(base=base)
