"""Definition versions: every save of an agent, prompt or model recorded as a numbered,
immutable version, restoring one, and the versions a session is pinned to.

``record`` is called from the two places every write goes through: ``save_definitions``
(the HTTP API, ``import_definitions``, ``load_demo``, restores, saved drafts) and the
studio's ``VersionedAdmin.save_related`` (the admin forms, which save their rows
themselves). A save that changes nothing records nothing: re-importing the same files or
pressing Save on an untouched form leaves the history as it was, so a version always
differs from the one before it.

Sessions: ``session_pins`` fixes, when a session starts, the version of its agent and of
every prompt, model and agent it can reach (side prompts, includes, sub-prompts, subagents,
models and fallbacks). The engine's store then reads those versions for the whole session,
also after a park or a resume on another worker; the next session takes the newest.
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db import IntegrityError, connection, transaction

from agents_app.base.errors import Invalid, NotFound
from agents_app.db.raw_sql import db_json, db_uuid, prepared_cursor, row_by_uuid, text_uuid
from agents_app.models import (
    Agent,
    DefinitionDraft,
    DefinitionVersion,
    LanguageModel,
    ModelFallback,
    Prompt,
    PromptPart,
    PromptTool,
    Thread,
    ThreadSession,
)
from agents_app.services.definitions import rows as defs
from runtime.core.spec import AgentDefinition, ModelDefinition, PromptDefinition

Kind = Literal["agents", "prompts", "models"]
KINDS: tuple[Kind, ...] = ("agents", "prompts", "models")
DEFINITION_CLASSES: dict[str, type[AgentDefinition | PromptDefinition | ModelDefinition]] = {
    "agents": AgentDefinition,
    "prompts": PromptDefinition,
    "models": ModelDefinition,
}
Author = AbstractBaseUser | AnonymousUser | None


def current_dump(kind: str, name: str) -> dict[str, Any] | None:
    """The definition as saved now (``dump()``), or None when there is none by that name."""
    if kind == "agents":
        agent = (
            Agent.objects.select_related("side_a_prompt", "side_b_prompt").filter(name=name).first()
        )
        return defs.agent_definition(agent).dump() if agent else None
    if kind == "prompts":
        prompt = Prompt.objects.select_related("model").filter(name=name).first()
        return defs.prompt_definition(prompt).dump() if prompt else None
    model = LanguageModel.objects.filter(name=name).first()
    return defs.model_definition(model).dump() if model else None


def latest(kind: str, name: str) -> DefinitionVersion | None:
    return DefinitionVersion.objects.filter(kind=kind, name=name).order_by("-number").first()


def _author_fields(author: Author) -> dict[str, Any]:
    if author is None or not author.is_authenticated:
        return {"author": None, "author_name": ""}
    return {"author": author, "author_name": author.get_username()}


def _record_dump(
    kind: str, name: str, dump: dict[str, Any], *, author: Author, note: str, source: str
) -> DefinitionVersion | None:
    for _ in range(3):
        last = latest(kind, name)
        if last is not None and last.definition == dump:
            return None
        try:
            # A savepoint: a concurrent save that took the same number fails only this insert.
            with transaction.atomic():
                return DefinitionVersion.objects.create(
                    kind=kind,
                    name=name,
                    number=(last.number if last else 0) + 1,
                    definition=dump,
                    source=source,
                    note=note[:500],
                    **_author_fields(author),
                )
        except IntegrityError:
            continue
    raise IntegrityError(f"Could not number a new version of {kind}/{name}")


def record(
    kind: str, name: str, *, author: Author = None, note: str = "", source: str
) -> DefinitionVersion | None:
    """Record the definition as saved now as its next version; None when nothing changed
    since the latest version (or the definition does not exist)."""
    dump = current_dump(kind, name)
    if dump is None:
        return None
    return _record_dump(kind, name, dump, author=author, note=note, source=source)


def record_many(
    items: Iterable[tuple[str, str]], *, author: Author = None, note: str = "", source: str
) -> list[DefinitionVersion]:
    """``record`` for each (kind, name) saved together; only the versioned kinds count."""
    created = []
    for kind, name in items:
        if kind in KINDS:
            version = record(kind, name, author=author, note=note, source=source)
            if version is not None:
                created.append(version)
    return created


def history(kind: str, name: str) -> list[DefinitionVersion]:
    """Every version of one definition, newest first."""
    return list(
        DefinitionVersion.objects.filter(kind=kind, name=name)
        .select_related("author")
        .order_by("-number")
    )


def version(kind: str, name: str, number: int) -> DefinitionVersion:
    found = DefinitionVersion.objects.filter(kind=kind, name=name, number=number).first()
    if found is None:
        raise NotFound(f"{kind[:-1].capitalize()} {name} has no version {number}")
    return found


def parse_definition(
    kind: str, data: dict[str, Any]
) -> AgentDefinition | PromptDefinition | ModelDefinition:
    """A stored version's JSON as the engine's definition object."""
    return DEFINITION_CLASSES[kind].model_validate(data)


def readable(kind: str, data: dict[str, Any] | None) -> dict[str, Any] | None:
    """``data`` with its keys in the definition's own order (PostgreSQL's jsonb keeps no key
    order), so two versions diff line by line; as stored when it no longer parses."""
    if data is None:
        return None
    try:
        return parse_definition(kind, data).dump()
    except ValueError:
        return data


# --- sessions ------------------------------------------------------------------------------


@dataclass
class Pins:
    """What a session runs on: version numbers by kind and name, drafts by ``kind/name``,
    and (when just computed) the definitions themselves, so the store needs no second read."""

    agent: str = ""
    versions: dict[str, dict[str, int]] = field(default_factory=dict)
    drafts: dict[str, str] = field(default_factory=dict)
    loaded: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {"agent": self.agent, **self.versions, "drafts": self.drafts}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Pins:
        return cls(
            agent=str(data.get("agent") or ""),
            versions={k: dict(data.get(k) or {}) for k in KINDS},
            drafts=dict(data.get("drafts") or {}),
        )

    def stamp(self, agent: str | None, prompt: str, model: str) -> dict[str, Any] | None:
        """The versions one log row ran on (``{"agents/<name>": 3, "prompts/<name>": 2, …}``)."""
        out: dict[str, Any] = {}
        for kind, name in (("agents", agent), ("prompts", prompt), ("models", model)):
            if not name:
                continue
            key = f"{kind}/{name}"
            if key in self.drafts:
                out[key] = "draft"
            elif name in self.versions.get(kind, {}):
                out[key] = self.versions[kind][name]
        return out or None


def references(kind: str, data: dict[str, Any]) -> list[tuple[str, str]]:
    """The definitions one definition names: what a session of it may load."""
    found: list[tuple[str, str]] = []
    if kind == "agents":
        for side in ("sideA", "sideB"):
            if isinstance(data.get(side), dict) and data[side].get("prompt"):
                found.append(("prompts", data[side]["prompt"]))
    elif kind == "prompts":
        if data.get("model"):
            found.append(("models", data["model"]))
        for part in data["prompt"] if isinstance(data.get("prompt"), list) else []:
            if isinstance(part, dict) and part.get("type") == "include":
                found.append(("prompts", part["prompt"]))
        for entry in data.get("tools") or []:
            tool = entry if isinstance(entry, str) else (entry or {}).get("name", "")
            if tool and ":" not in tool:  # mcp:/provider: tools are not definitions
                found += [("prompts", tool), ("agents", tool)]
    elif kind == "models":
        found += [("models", name) for name in data.get("fallbacks") or []]
    return found


def newest(kind: str, name: str) -> tuple[int, dict[str, Any]] | None:
    """The newest version of a definition, recording the saved state first when it differs
    (a definition saved before versions existed, or changed by a path that records none)."""
    dump = current_dump(kind, name)
    if dump is None:
        return None
    recorded = _record_dump(
        kind,
        name,
        dump,
        author=None,
        note="Recorded when a session first used it",
        source=DefinitionVersion.Source.BASELINE,
    )
    number = recorded.number if recorded else latest(kind, name).number  # type: ignore[union-attr]
    return number, dump


def compute_pins(agent: str, thread_id: str | None = None) -> Pins:
    """The versions a session of ``agent`` starting now uses (drafts of ``thread_id``'s try)."""
    pins = Pins(agent=agent, versions={k: {} for k in KINDS})
    drafts = {
        f"{d.kind}/{d.name}": d
        for d in (
            DefinitionDraft.objects.filter(thread_id=thread_id, saved_as__isnull=True)
            if thread_id
            else []
        )
    }
    todo: list[tuple[str, str]] = [("agents", agent)]
    seen: set[tuple[str, str]] = set()
    while todo:
        kind, name = todo.pop()
        if (kind, name) in seen:
            continue
        seen.add((kind, name))
        draft = drafts.get(f"{kind}/{name}")
        pinned = newest(kind, name)
        if pinned is None and draft is None:
            continue
        if pinned is not None:
            pins.versions[kind][name] = pinned[0]
        data = draft.definition if draft is not None else pinned[1]  # type: ignore[index]
        if draft is not None:
            pins.drafts[f"{kind}/{name}"] = str(draft.pk)
        pins.loaded[(kind, name)] = data
        todo += references(kind, data)
    return pins


def pins_at(agent: str, asked: dict[str, int]) -> Pins:
    """The pins of a session of ``agent`` on the versions ``asked`` ({"prompts/<name>": 3,
    …}) and the newest versions of everything else it uses (an eval run's pins)."""
    pins = Pins(agent=agent, versions={k: {} for k in KINDS})
    todo: list[tuple[str, str]] = [("agents", agent)]
    seen: set[tuple[str, str]] = set()
    used: set[str] = set()
    while todo:
        kind, name = todo.pop()
        if (kind, name) in seen:
            continue
        seen.add((kind, name))
        key = f"{kind}/{name}"
        if key in asked:
            used.add(key)
            number, data = asked[key], dict(version(kind, name, asked[key]).definition)
        else:
            found = newest(kind, name)
            if found is None:
                continue
            number, data = found
        pins.versions[kind][name] = number
        pins.loaded[(kind, name)] = data
        todo += references(kind, data)
    unused = sorted(set(asked) - used)
    if unused:
        raise Invalid(f"versions: {', '.join(unused)} is not used by agent {agent}")
    return pins


@functools.cache
def _session_pin_sql() -> str:
    """The session's pins and, for a start, the stamp of the definitions in the same read:
    a fixed statement, every session start runs it on its worker's one database thread."""
    return (
        f"SELECT s.definition_versions, s.thread_id, a.name, {_stamp_columns('s.thread_id')} "
        f"FROM {ThreadSession._meta.db_table} s "
        f"JOIN {Thread._meta.db_table} t ON t.id = s.thread_id "
        f"JOIN {Agent._meta.db_table} a ON a.id = t.agent_id WHERE s.id = %s"
    )


@functools.cache
def _fix_pins_sql() -> str:
    """Fix a session's pins unless another process did first: a fixed statement, every
    session start runs it (it was the ORM's largest cost on the worker's database thread)."""
    column = ThreadSession._meta.get_field("definition_versions").column
    return (
        f"UPDATE {ThreadSession._meta.db_table} SET {column} = %s "
        f"WHERE id = %s AND {column} IS NULL"
    )


def session_pins(session_id: str) -> Pins | None:
    """The session's pins, fixed now if it has none yet (its start). None for no such row."""
    row = row_by_uuid(_session_pin_sql(), session_id)
    if row is None:
        return None
    pk = db_uuid(session_id)
    stored, thread_id, agent_name, *stamp = row
    if stored is not None:
        return Pins.from_json(db_json(stored))
    pins = pins_for(agent_name, text_uuid(thread_id) or "", stamp=_stamp_of(stamp))
    field = ThreadSession._meta.get_field("definition_versions")
    with prepared_cursor() as cursor:
        cursor.execute(_fix_pins_sql(), [field.get_db_prep_save(pins.as_json(), connection), pk])
        fixed = cursor.rowcount
    if not fixed:  # another process pinned it first: use what it fixed
        again = ThreadSession.objects.filter(pk=pk).values_list("definition_versions", flat=True)
        return Pins.from_json(again[0] or {})
    return pins


def pinned_definition(pins: Pins, kind: str, name: str) -> dict[str, Any] | None:
    """The JSON a pinned session uses for (kind, name); None when it is not pinned."""
    if (kind, name) in pins.loaded:
        return pins.loaded[(kind, name)]
    draft_id = pins.drafts.get(f"{kind}/{name}")
    if draft_id is not None:
        draft = DefinitionDraft.objects.filter(pk=draft_id).values_list("definition", flat=True)
        if draft:
            return draft[0]  # type: ignore[no-any-return]
    number = pins.versions.get(kind, {}).get(name)
    if number is None:
        return None
    stored = DefinitionVersion.objects.filter(kind=kind, name=name, number=number).values_list(
        "definition", flat=True
    )
    return stored[0] if stored else None


# --- pins without re-reading every definition at every session start (issue #21) ---
# ``compute_pins`` reads the agent, its prompts and models, turns each into its spec dump
# and compares it with the newest recorded version: a dozen queries and most of a
# worker's CPU when hundreds of sessions start at once. Between two saves the answer is
# the same, so each process keeps the last answer per agent together with a *stamp* of
# everything it was computed from, read in one query: row counts and newest
# ``updated_at`` of agents, prompts and models, counts and newest ids of prompt parts,
# prompt tools and model fallbacks, and the newest id of recorded versions (append-only).
# Any save, delete or new version changes the stamp, and the next session computes afresh.
#
# Threads with an unsaved draft always compute (their pins differ per thread). An answer
# is kept only when the stamp was the same before and after computing it, so a save that
# lands meanwhile is never hidden behind a stale answer.
#
# The answer is kept as JSON text and decoded at each hit: every session gets definitions of
# its own to parse, in one C call, where copying the kept objects (``copy.deepcopy``) took
# about 140 Python calls a start (issue #58).

_cache: dict[str, tuple[tuple[Any, ...], bytes]] = {}
_lock = threading.Lock()


def _stamp_columns(thread: str) -> str:
    """The stamp's columns; ``thread`` is the SQL of the thread whose open drafts count."""
    columns: list[str] = []
    newest = [(m, "updated_at") for m in (Agent, Prompt, LanguageModel)] + [
        (m, "id") for m in (PromptPart, PromptTool, ModelFallback)
    ]
    for model, column in newest:
        table = connection.ops.quote_name(model._meta.db_table)
        columns += [f"(SELECT COUNT(*) FROM {table})", f"(SELECT MAX({column}) FROM {table})"]
    # Versions are never changed or deleted (the history outlives its definitions), so a new
    # one is a new highest id: its primary key answers in one index probe. Counting them
    # read the whole history at every session start (3.1 ms at 22,000 versions, issue #39).
    versions = connection.ops.quote_name(DefinitionVersion._meta.db_table)
    columns.append(f"(SELECT MAX(id) FROM {versions})")
    drafts = connection.ops.quote_name(DefinitionDraft._meta.db_table)
    columns.append(
        f"(SELECT COUNT(*) FROM {drafts} d WHERE d.thread_id = {thread} AND d.saved_as IS NULL)"
    )
    return ", ".join(columns)


def _stamp_of(row: Iterable[Any]) -> tuple[tuple[Any, ...], int]:
    values = tuple(row)
    return values[:-1], int(values[-1] or 0)


def definitions_stamp(thread_id: str | None) -> tuple[tuple[Any, ...], int]:
    """(what every definition was computed from, the thread's open drafts): one query."""
    with prepared_cursor() as cursor:
        cursor.execute("SELECT " + _stamp_columns("%s"), [thread_id])
        return _stamp_of(cursor.fetchone())


def pins_for(
    agent: str, thread_id: str | None, *, stamp: tuple[tuple[Any, ...], int] | None = None
) -> Pins:
    """``compute_pins(agent, thread_id)``, from this process's cache while nothing changed
    (``stamp``: the definitions' stamp when the caller read it already)."""
    before, drafts = stamp if stamp is not None else definitions_stamp(thread_id)
    if not drafts:
        with _lock:
            cached = _cache.get(agent)
        if cached is not None and cached[0] == before:
            return _unkept(cached[1])
    pins = compute_pins(agent, thread_id)
    if not drafts:
        after, _ = definitions_stamp(thread_id)
        if after == before:
            with _lock:
                _cache[agent] = (before, _kept(pins))
    return pins


def _kept(pins: Pins) -> bytes:
    """``pins`` with the definitions it loaded, as JSON text (``_unkept`` reads it back)."""
    data = {"pins": pins.as_json(), "loaded": [[*key, d] for key, d in pins.loaded.items()]}
    try:
        return orjson.dumps(data)
    except orjson.JSONEncodeError:  # integers past 64 bits: the standard library writes them
        return json.dumps(data).encode()


def _unkept(text: bytes) -> Pins:
    data = db_json(text)
    pins = Pins.from_json(data["pins"])
    pins.loaded = {(kind, name): definition for kind, name, definition in data["loaded"]}
    return pins


def clear_pin_cache() -> None:
    with _lock:
        _cache.clear()
