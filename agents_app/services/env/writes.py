"""Env values written through the API: instance, user and thread scopes.

One patch shape for every scope (the reference's ``env_patch`` /
``env_type_patch`` / ``env_delete``, plus a full replacement for threads).
Values are encrypted by ``EnvValue.value``; secrets are never read back by
callers of this module (selectors return names and types only).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from agents_app.base.errors import Invalid
from agents_app.models import EnvValue, Thread

KEY_MAX = 128
VALUE_MAX = 64 * 1024
_KEY_RE = re.compile(r"^[^\s\x00]+$")


@dataclass
class EnvPatch:
    """What to change. ``replace`` (threads only) swaps the whole scope first."""

    replace: dict[str, str] | None = None
    replace_types: dict[str, str] | None = None
    patch: dict[str, str] = field(default_factory=dict)
    type_patch: dict[str, str] = field(default_factory=dict)
    delete: list[str] = field(default_factory=list)

    def is_empty(self) -> bool:
        return self.replace is None and not (self.patch or self.type_patch or self.delete)


def clean_key(raw: Any) -> str:
    if not isinstance(raw, str):
        raise Invalid("Env names must be strings")
    key = raw.strip()
    if not key or len(key) > KEY_MAX or not _KEY_RE.match(key):
        raise Invalid(f"Invalid env name {raw[:40]!r}: 1 to {KEY_MAX} characters, no spaces")
    return key


def _clean_values(values: dict[str, Any], part: str) -> dict[str, str]:
    out = {}
    for raw, value in values.items():
        if not isinstance(value, str):
            raise Invalid(f"{part}: every value must be a string")
        if len(value) > VALUE_MAX or "\x00" in value:
            raise Invalid(f"{part}: value of {raw!r} is too long or contains NUL")
        out[clean_key(raw)] = value
    return out


def _type_of(value: str) -> str:
    # The reference's rule: anything but "text" is a secret.
    return EnvValue.Type.TEXT if value == "text" else EnvValue.Type.SECRET


def clean_patch(patch: EnvPatch) -> EnvPatch:
    return EnvPatch(
        replace=_clean_values(patch.replace, "env") if patch.replace is not None else None,
        replace_types={clean_key(k): _type_of(v) for k, v in (patch.replace_types or {}).items()},
        patch=_clean_values(patch.patch, "env_patch"),
        type_patch={clean_key(k): _type_of(v) for k, v in patch.type_patch.items()},
        delete=[clean_key(k) for k in patch.delete],
    )


def _scope_rows(scope: str, user: Any, thread: Thread | None) -> dict[str, EnvValue]:
    qs = EnvValue.objects.select_for_update().filter(scope=scope)
    if scope == EnvValue.Scope.USER:
        qs = qs.filter(user=user)
    elif scope == EnvValue.Scope.THREAD:
        qs = qs.filter(thread=thread)
    return {row.key: row for row in qs}


@transaction.atomic
def env_apply(
    *,
    scope: str,
    patch: EnvPatch,
    user: Any = None,
    thread: Thread | None = None,
    actor: Any = None,
) -> dict[str, str]:
    """Apply ``patch`` to one scope; returns the scope's ``{name: type}`` afterwards."""
    patch = clean_patch(patch)
    existing = _scope_rows(scope, user, thread)
    # name -> (new plaintext or None to keep the stored one, type)
    wanted: dict[str, tuple[str | None, str]] = {
        k: (None, row.value_type) for k, row in existing.items()
    }
    if patch.replace is not None:
        types = patch.replace_types or {}
        wanted = {k: (v, types.get(k, EnvValue.Type.SECRET)) for k, v in patch.replace.items()}
    for key, value in patch.patch.items():
        wanted[key] = (value, wanted.get(key, (None, EnvValue.Type.SECRET))[1])
    for key, kind in patch.type_patch.items():
        if key not in wanted:
            raise Invalid(f"env_type_patch: {key} has no matching env value")
        wanted[key] = (wanted[key][0], kind)
    for key in patch.delete:
        wanted.pop(key, None)
    for key, row in existing.items():
        if key not in wanted:
            row.delete()
    for key, (plain, kind) in wanted.items():
        row = existing.get(key) or EnvValue(scope=scope, key=key, user=user, thread=thread)
        if plain is None and row.pk is not None and row.value_type == kind:
            continue
        if plain is not None:
            row.value = plain
        row.value_type = kind
        row.updated_by = actor if getattr(actor, "pk", None) else None
        row.save()
    return {k: wanted[k][1] for k in sorted(wanted)}
