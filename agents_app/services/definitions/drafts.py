"""Prompt drafts: an edit of a prompt's instructions tried in its own thread before it is
saved ("Try this agent"), then saved with a note as the prompt's next version.

A draft holds the whole prompt definition with the edited text. The thread created to try
it is tagged ``draft`` and linked to the draft (``DefinitionDraft.thread``); the sessions of
that thread use the draft in place of the saved prompt (``definition_versions.compute_pins``),
every other session the saved one. Only the text is edited here: its model, tools and
settings are the prompt's own, changed (and versioned) on the prompt's page.
"""

from __future__ import annotations

from typing import Any

from agents_app.base.errors import Conflict, Invalid, NotFound
from agents_app.models import DefinitionDraft, DefinitionVersion, Thread
from agents_app.services.definitions import rows as defs
from agents_app.services.definitions import saves as definition_saves
from agents_app.services.definitions import versions
from runtime.definitions.validation import parse_and_validate

DRAFT_TAG = "draft"


def editable_texts(definition: dict[str, Any]) -> list[str]:
    """The texts a draft may change: the plain prompt, or each text part in order."""
    prompt = definition.get("prompt")
    if isinstance(prompt, str):
        return [prompt]
    return [p.get("content", "") for p in prompt or [] if p.get("type") == "text"]


def _with_texts(definition: dict[str, Any], texts: list[str]) -> dict[str, Any]:
    prompt = definition.get("prompt")
    if isinstance(prompt, str):
        return {**definition, "prompt": texts[0]}
    parts, given = [], iter(texts)
    for part in prompt or []:
        parts.append({**part, "content": next(given)} if part.get("type") == "text" else part)
    return {**definition, "prompt": parts}


def draft_create(name: str, texts: list[str], *, author: Any = None) -> DefinitionDraft:
    """A draft of prompt ``name`` with its text(s) replaced by ``texts``."""
    newest = versions.newest("prompts", name)
    if newest is None:
        raise NotFound(f"Prompt not found: {name}")
    number, saved = newest
    if len(texts) != len(editable_texts(saved)):
        raise Invalid("The prompt's parts changed meanwhile: reload the page")
    data = _with_texts(saved, texts)
    if data == saved:
        raise Invalid("The draft is the same as the saved prompt: change its text first")
    parsed, errors = parse_and_validate("prompts", data)
    if parsed is None or errors:
        raise Invalid("; ".join(str(e) for e in errors))
    return DefinitionDraft.objects.create(
        kind="prompts",
        name=name,
        definition=data,
        base_number=number,
        author=author if author is not None and author.is_authenticated else None,
    )


def draft_attach(draft: DefinitionDraft, thread: Thread) -> None:
    """Make ``thread`` the draft's try: its sessions run on the draft."""
    draft.thread = thread
    draft.save(update_fields=["thread"])


def draft_get(draft_id: str, name: str) -> DefinitionDraft:
    draft = DefinitionDraft.objects.filter(pk=draft_id, kind="prompts", name=name).first()
    if draft is None:
        raise NotFound("Draft not found")
    return draft


def draft_save(draft: DefinitionDraft, *, note: str, author: Any = None) -> DefinitionVersion:
    """Save the draft as the prompt's next version; refused when the prompt was saved since
    the draft was made (saving would silently undo that change)."""
    if draft.saved_as is not None:
        raise Conflict(f"This draft was saved already, as version {draft.saved_as}")
    latest = versions.latest("prompts", draft.name)
    if latest is not None and latest.number != draft.base_number:
        raise Conflict(
            f"{draft.name} was saved since this draft was made (version {latest.number}): "
            "make a new draft from it"
        )
    try:
        definition_saves.save_definitions(
            [(f"prompts/{draft.name}", versions.parse_definition("prompts", draft.definition))],
            author=author,
            note=note or "Saved from a draft",
            source=DefinitionVersion.Source.DRAFT,
        )
    except defs.DefinitionsInvalid as exc:
        raise Invalid("; ".join(str(e) for errs in exc.errors.values() for e in errs)) from None
    saved = versions.latest("prompts", draft.name)
    assert saved is not None
    draft.saved_as = saved.number
    draft.save(update_fields=["saved_as"])
    return saved
