"""What the eval run form offers to pin (issue #55): every definition a session of the chosen
agent reaches (the agent, its side prompts, includes, sub-prompts, subagents, models and
fallbacks, as ``services.evals.pins.used_by`` finds them) with its recorded versions, for a
select each: "3 — 2 Dec 2026, by alice: changed the greeting".

Read-only, unlike ``used_by`` (which records a baseline version of a definition saved
without one, as a session start must): showing a form writes nothing, so the walk here reads
the saved definitions and their recorded versions as they are."""

from __future__ import annotations

from dataclasses import dataclass

from django.utils import timezone

from agents_app.models import DefinitionVersion
from agents_app.services.definitions import versions as definition_versions

KIND_WORDS = {"agents": "Agent", "prompts": "Prompt", "models": "Model"}
NOTE_CHARS = 60


@dataclass(frozen=True)
class PinChoice:
    """One definition the agent uses and the versions it may be pinned to, newest first."""

    key: str  # "prompts/support-prompt", as the run's versions name it
    label: str  # "Prompt support-prompt"
    versions: tuple[tuple[int, str], ...]
    current: str  # what the "current" option says


def version_words(row: DefinitionVersion) -> str:
    """ "3 — 2 Dec 2026, by alice: changed the greeting" """
    when = timezone.localtime(row.created_at).strftime("%-d %b %Y")
    words = f"{row.number} — {when}"
    if row.author_name:
        words += f", by {row.author_name}"
    note = row.note.strip()
    if note:
        cut = note if len(note) <= NOTE_CHARS else note[: NOTE_CHARS - 1].rstrip() + "…"
        words += f": {cut}"
    return words


def definitions_of(agent: str) -> list[PinChoice]:
    """The definitions a session of ``agent`` uses now, the agent first, in the order the
    walk reaches them; each with its versions."""
    todo = [("agents", agent)]
    seen: set[tuple[str, str]] = set()
    found: list[PinChoice] = []
    while todo:
        kind, name = todo.pop(0)
        if (kind, name) in seen:
            continue
        seen.add((kind, name))
        dump = definition_versions.current_dump(kind, name)
        if dump is None:
            continue  # a tool name that is neither a prompt nor an agent of that kind
        found.append(_choice(kind, name, dump))
        todo += definition_versions.references(kind, dump)
    return found


def _choice(kind: str, name: str, dump: dict[str, object]) -> PinChoice:
    rows = definition_versions.history(kind, name)
    newest = rows[0] if rows else None
    if newest is not None and newest.definition == dump:
        current = f"current (version {newest.number})"
    else:
        current = "current (as saved now)"
    return PinChoice(
        key=f"{kind}/{name}",
        label=f"{KIND_WORDS[kind]} {name}",
        versions=tuple((row.number, version_words(row)) for row in rows),
        current=current,
    )
