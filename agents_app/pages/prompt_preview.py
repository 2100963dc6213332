"""The prompt editor's live preview: an unsaved prompt rendered with the engine's renderer.

Differences from a real session, on purpose: there is no thread or user yet, so env
parts resolve from the prompt's own values and the instance's; a secret is shown as
``[secret NAME]`` (its plaintext is never read for a preview) and a value nothing sets
as ``[NAME: not set here]`` (the engine would insert nothing).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from asgiref.sync import async_to_sync, sync_to_async
from django.db.models import Q

from agents_app.base.encryption import DecryptionError
from agents_app.base.permissions import may_read_instance_env
from agents_app.models import EnvValue, Prompt
from agents_app.services.definitions.rows import prompt_definition
from runtime.core.redaction import Redactor
from runtime.core.spec import (
    PromptDefinition,
    PromptEnvPart,
    PromptIncludePart,
    PromptPart,
    PromptTextPart,
)
from runtime.step.prompting import render_prompt

MAX_PREVIEW_CHARS = 50_000


@dataclass(frozen=True)
class DraftPart:
    """One row of the editor's Parts table, as typed (the include by prompt name)."""

    kind: Literal["text", "include", "env"]
    value: str


def _definition(name: str, text: str, parts: list[DraftPart]) -> PromptDefinition:
    built: list[PromptPart] = []
    for part in parts:
        if part.kind == "include":
            built.append(PromptIncludePart(prompt=part.value))
        elif part.kind == "env":
            built.append(PromptEnvPart(property=part.value))
        else:
            built.append(PromptTextPart(content=part.value))
    # model_construct: a draft need not be valid (no model chosen yet) to be previewed.
    return PromptDefinition.model_construct(
        name=name or "(new prompt)", prompt=built or text, model=""
    )


def _env_shown(name: str, prompt_name: str, user: Any = None) -> str:
    rows = EnvValue.objects.filter(
        Q(scope=EnvValue.Scope.PROMPT, prompt__name=prompt_name) | Q(scope=EnvValue.Scope.INSTANCE),
        key=name,
    )
    # The prompt's own value wins over the instance's (the engine's order for these two).
    row = min(rows, key=lambda r: r.scope != EnvValue.Scope.PROMPT, default=None)
    if row is None:
        return f"[{name}: not set here]"
    if (
        row.scope == EnvValue.Scope.INSTANCE
        and user is not None
        and not may_read_instance_env(user)
    ):
        # Secrets resolve with the actor's rights (docs/security.md, Egress policy).
        return f"[{name}: an instance value you may not read]"
    if row.value_type == EnvValue.Type.SECRET:
        return f"[secret {name}]"
    try:
        return row.value
    except DecryptionError:
        return f"[{name}: cannot be decrypted]"


def _known_secrets() -> Redactor:
    """Typed text could still hold a secret's plaintext; mask every stored secret."""
    pairs = []
    for row in EnvValue.objects.filter(value_type=EnvValue.Type.SECRET):
        try:
            pairs.append((row.key, row.value))
        except DecryptionError:
            continue
    return Redactor(pairs)


def prompt_preview(*, name: str, text: str, parts: list[DraftPart], user: Any = None) -> str:
    """The system prompt the draft would produce, with secrets masked and instance values
    shown only to a ``user`` who may read them (``None``: an operator's command)."""
    draft = _definition(name, text, parts)

    @sync_to_async
    def load(prompt_name: str) -> PromptDefinition | None:
        row = Prompt.objects.filter(name=prompt_name).first()
        return prompt_definition(row) if row is not None else None

    @sync_to_async
    def env(key: str) -> str:
        return _env_shown(key, name, user)

    rendered = async_to_sync(render_prompt)(draft, load, env)
    return _known_secrets().text(rendered[:MAX_PREVIEW_CHARS])
