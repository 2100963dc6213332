"""Agents, prompts and models as a directory of JSON files, so teams can keep them in git.

Layout: ``<root>/{mcp,a2a,models,prompts,agents}/<name>.json``, one definition per file, each
holding the definition object exactly as the spec writes it (camelCase property names;
an agent file holds what ``defineAgent`` takes). Agents, prompts and models may also be
the reference's ``<name>.ts`` files (``export default defineAgent({...})``), read without
running them (``runtime.definitions.source``); export always writes JSON. A missing folder just means none of
that kind. Folders that hold code in the reference layout (``tools/``, ``hooks/`` …) are
skipped, so the same ``agents/`` directory can hold both; anything else is an error.

Import checks every file's structure with ``parse_and_validate`` and then hands the whole
batch to ``save_definitions`` for references, so a directory imports entirely or not at
all, and every error comes back as one line ``<file>: <field>: <sentence>``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db import DatabaseError, transaction
from django.db.models import Model

from agents_app.models import (
    A2aAgent,
    Agent,
    DefinitionVersion,
    KnowledgeBase,
    LanguageModel,
    McpServer,
    Prompt,
)
from agents_app.services.definitions import knowledge_files
from agents_app.services.definitions.mcp_servers import list_for_import
from agents_app.services.definitions.rows import (
    AnyDefinition,
    DefinitionsInvalid,
    all_definitions,
    build_catalog,
    validate_definition,
)
from agents_app.services.definitions.saves import SaveReport, save_definitions
from runtime.core.a2a_agents import A2aAgentDefinition, parse_agent
from runtime.core.spec import (
    SPEC_0_1,
    SPEC_0_2,
    AgentDefinition,
    ModelDefinition,
    PromptDefinition,
    SpecVersion,
)
from runtime.definitions.generations import NotExpressible, convert
from runtime.definitions.source import DEFINE_FUNCTIONS, SourceError, read_ts_definition
from runtime.definitions.validation import DefinitionError, parse_and_validate
from runtime.mcp.servers import McpServerDefinition, parse_server

# Dependency order: prompts refer to models, MCP servers and A2A agents, agents to prompts.
KINDS = ("mcp", "a2a", "models", "prompts", "agents")
# Version history in an export (hidden: ``_ignored`` skips it when the directory is imported).
HISTORY_FOLDER = ".history"
# Folders of the reference's agents/ layout that hold code, not definitions.
CODE_FOLDERS = frozenset({"tools", "hooks", "effects", "handlers", "api", "__pycache__"})
_KIND_MODELS: dict[str, type[Model]] = {
    "mcp": McpServer,
    "a2a": A2aAgent,
    "models": LanguageModel,
    "prompts": Prompt,
    "agents": Agent,
}


class DefinitionFilesInvalid(Exception):
    """Nothing was imported (or exported); ``errors`` holds one line per problem."""

    def __init__(self, errors: list[str]):
        self.errors = errors
        super().__init__("\n".join(errors))


@dataclass
class ExportReport:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    # Files in the kind folders that match no definition: left untouched, worth a look.
    stale: list[str] = field(default_factory=list)
    # Knowledge documents' files written beside their bases (``documents=True``).
    documents: list[str] = field(default_factory=list)


@dataclass
class _Scan:
    files: list[tuple[str, Path]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


# --- reading --------------------------------------------------------------------------


def _ignored(entry: Path) -> bool:
    # .git, .DS_Store, .gitkeep, editor files; a README explaining the folder is welcome.
    return entry.name.startswith(".") or entry.name.upper().startswith("README")


def _scan(root: Path) -> _Scan:
    if not root.exists():
        raise DefinitionFilesInvalid([f"{root}: the directory does not exist."])
    if not root.is_dir():
        raise DefinitionFilesInvalid([f"{root}: not a directory."])
    scan = _Scan()
    expected = "definitions go in agents/, prompts/, models/, mcp/, a2a/ or knowledge/"
    for entry in sorted(root.iterdir()):
        if _ignored(entry) or (entry.is_dir() and entry.name in CODE_FOLDERS):
            continue
        if not entry.is_dir():
            scan.errors.append(f"{entry.name}: unexpected file at the top level ({expected}).")
        elif entry.name not in KINDS and entry.name != knowledge_files.FOLDER:
            scan.errors.append(f"{entry.name}/: unknown folder ({expected}).")
    for kind in KINDS:
        folder = root / kind
        if folder.is_dir():
            _scan_kind(kind, folder, scan)
    return scan


def _scan_kind(kind: str, folder: Path, scan: _Scan) -> None:
    for entry in sorted(folder.iterdir()):
        label = f"{kind}/{entry.name}"
        if _ignored(entry):
            continue
        if entry.is_dir():
            scan.errors.append(f"{label}/: folders inside {kind}/ are not read.")
        elif entry.suffix == ".json" or (entry.suffix == ".ts" and kind in DEFINE_FUNCTIONS):
            scan.files.append((kind, entry))
        else:
            scan.errors.append(
                f"{label}: not a definition file (.json, or .ts for agents, prompts, models)."
            )
    stems = [p.stem for k, p in scan.files if k == kind]
    for stem in sorted({s for s in stems if stems.count(s) > 1}):
        scan.errors.append(f"{kind}/{stem}: defined twice (.json and .ts); keep one file.")


def _load(kind: str, path: Path) -> tuple[AnyDefinition | None, list[str]]:
    """Parse one file and apply the rules that need no other definition."""
    label = f"{kind}/{path.name}"
    try:
        # utf-8-sig: some Windows editors start files with a byte-order mark.
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        return None, [f"{label}: the file is not UTF-8 text."]
    except OSError as exc:
        return None, [f"{label}: cannot be read ({exc.strerror or exc})."]
    try:
        data = _parse_text(kind, path, text)
    except json.JSONDecodeError as exc:
        return None, [f"{label}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}."]
    except SourceError as exc:
        return None, [f"{label}: {exc}"]
    defn: Any
    if kind == "mcp":
        defn, errs = parse_server(data)
    elif kind == "a2a":
        defn, errs = parse_agent(data)
    else:
        defn, errs = parse_and_validate(kind, data)
    lines = [f"{label}: {e}" for e in errs]
    name = data.get("name") if isinstance(data, dict) else None
    if isinstance(name, str) and name and name != path.stem:
        lines.append(
            f"{label}: name: The name '{name}' does not match the file name; "
            f"rename the file to {name}{path.suffix} or change the name."
        )
    if lines:
        return None, lines
    return defn, []  # type: ignore[return-value]  # parse_and_validate returns this kind's class


def _parse_text(kind: str, path: Path, text: str) -> Any:
    """The definition object of a file: JSON, or the reference's ``export default defineX({})``."""
    if path.suffix == ".ts":
        return read_ts_definition(text.encode("utf-8"), kind)
    return json.loads(text)


def _read(root: Path) -> tuple[list[tuple[str, AnyDefinition]], list[str], _Scan]:
    """Every well-formed definition under ``root`` (labelled by file) and the errors of the rest."""
    scan = _scan(root)
    items: list[tuple[str, AnyDefinition]] = []
    errors = list(scan.errors)
    for kind, path in scan.files:
        defn, errs = _load(kind, path)
        errors += errs
        if defn is not None:
            items.append((f"{kind}/{path.name}", defn))
    return items, errors, scan


def _error_lines(errors: dict[str, list[DefinitionError]]) -> list[str]:
    return [f"{label}: {e}" for label, errs in errors.items() for e in errs]


def _reference_errors(
    items: list[tuple[str, AnyDefinition]], scan: _Scan, knowledge: Iterable[str] = ()
) -> list[str]:
    """Reference errors of the well-formed files, so one run reports everything.

    Names of the files that failed count as existing: their own errors are reported
    already, and "does not exist" for each reference to them would only add noise.
    """
    catalog = build_catalog([d for _, d in items])
    assert catalog.knowledge_bases is not None
    catalog.knowledge_bases.update(knowledge)  # bases the same directory defines
    for kind, path in scan.files:
        if kind == "mcp":
            assert catalog.mcp_tools is not None
            catalog.mcp_tools.setdefault(path.stem, set())
        elif kind == "a2a":
            assert catalog.a2a_agents is not None
            catalog.a2a_agents.add(path.stem)
        else:
            getattr(catalog, kind).add(path.stem)
    errors = {label: validate_definition(d, catalog) for label, d in items}
    return _error_lines({label: errs for label, errs in errors.items() if errs})


# --- import ---------------------------------------------------------------------------


def _existing(items: list[tuple[str, AnyDefinition]]) -> set[tuple[str, str]]:
    """(kind, name) of the definitions in ``items`` that the database already holds."""
    found: set[tuple[str, str]] = set()
    for kind, model in _KIND_MODELS.items():
        names = [d.name for label, d in items if _kind_of(label) == kind]
        rows = model._default_manager.filter(name__in=names).values_list("name", flat=True)
        found.update((kind, name) for name in rows)
    return found


def _kind_of(label: str) -> str:
    return label.split("/", 1)[0]


def _list_mcp_tools(
    items: list[tuple[str, AnyDefinition]],
) -> tuple[list[tuple[str, AnyDefinition]], list[str]]:
    """Each imported MCP server with its tools listed now (so it is usable at once), and a
    note for each server that could not be listed."""
    out: list[tuple[str, AnyDefinition]] = []
    notes: list[str] = []
    for label, d in items:
        if isinstance(d, McpServerDefinition):
            d, problem = list_for_import(d)
            if problem:
                notes.append(
                    f"{label}: {problem} Its tools are listed when a session first uses it."
                )
        out.append((label, d))
    return out, notes


def definitions_import(*, directory: Path, only_missing: bool = False) -> SaveReport:
    """Import every definition file under ``directory``: all of them, or none.

    Re-importing updates what exists (matched by name); nothing is deleted. With
    ``only_missing``, definitions that already exist are left as they are (the demo
    loader uses this so edits made in the studio survive a restart). Raises
    ``DefinitionFilesInvalid`` listing every error; the database is then unchanged.
    """
    items, errors, scan = _read(directory)
    models = {d.name: d.provider for _, d in items if isinstance(d, ModelDefinition)}
    bases, knowledge_errors = knowledge_files.read_knowledge(directory, models)
    errors += knowledge_errors
    if only_missing:
        existing = _existing(items)
        items = [(label, d) for label, d in items if (_kind_of(label), d.name) not in existing]
        have = set(KnowledgeBase.objects.values_list("name", flat=True))
        bases = [b for b in bases if b.definition.name not in have]
    if errors:
        names = [b.definition.name for b in bases]
        raise DefinitionFilesInvalid(errors + _reference_errors(items, scan, names))
    items, notes = _list_mcp_tools(items)
    try:
        # Knowledge bases first: prompts list them as knowledge:<name>. All or nothing.
        known = set(KnowledgeBase.objects.values_list("name", flat=True))
        with transaction.atomic():
            queued = knowledge_files.save_knowledge(bases)
            report = save_definitions(items, note=f"Imported from {directory.name}/")
        report.notes += notes
        for base in bases:
            (report.updated if base.definition.name in known else report.created).append(base.label)
        report.queued_documents = queued
        return report
    except DefinitionsInvalid as exc:
        raise DefinitionFilesInvalid(_error_lines(exc.errors)) from None
    except DatabaseError as exc:
        # Validation passed but the database refused (e.g. a value longer than its column).
        raise DefinitionFilesInvalid([f"The database refused the import: {exc}".strip()]) from None


# --- export ---------------------------------------------------------------------------


def definition_json(defn: AnyDefinition, spec: SpecVersion = SPEC_0_2) -> str:
    """The file text of one definition in ``spec``: stable, pretty, with a trailing newline.

    Keys follow the definition's field order and defaults are left out; a 0.1.0 agent
    keeps ``type`` even at its default, because it is the first thing a reader wants.
    Raises ``NotExpressible`` when ``spec`` cannot say what the definition does.
    """
    data, _ = convert(_kind(defn), defn.dump(), spec)
    if isinstance(defn, AgentDefinition) and spec == SPEC_0_1:
        rest = {k: v for k, v in data.items() if k not in ("name", "type")}
        data = {"name": defn.name, "type": data.get("type", defn.type), **rest}
    elif isinstance(defn, McpServerDefinition):
        rest = {k: v for k, v in data.items() if k not in ("name", "transport")}
        data = {"name": defn.name, "transport": defn.transport, **rest}
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _kind(defn: AnyDefinition) -> str:
    if isinstance(defn, AgentDefinition):
        return "agents"
    if isinstance(defn, PromptDefinition):
        return "prompts"
    if isinstance(defn, A2aAgentDefinition):
        return "a2a"
    return "models" if isinstance(defn, ModelDefinition) else "mcp"


def _texts(
    definitions: dict[str, list[AnyDefinition]], spec: SpecVersion
) -> dict[str, list[tuple[str, str]]]:
    """Each kind's (name, file text) in ``spec``; every definition ``spec`` cannot hold is
    reported, and then nothing is written."""
    texts: dict[str, list[tuple[str, str]]] = {}
    errors: list[str] = []
    for kind in KINDS:
        for defn in definitions[kind]:
            try:
                texts.setdefault(kind, []).append((defn.name, definition_json(defn, spec)))
            except NotExpressible as exc:
                errors.append(f"{kind}/{defn.name}.json: {exc} (spec {spec}; nothing was exported)")
    if errors:
        raise DefinitionFilesInvalid(errors)
    return texts


def definitions_export(
    *,
    directory: Path,
    history: bool = False,
    spec: SpecVersion = SPEC_0_2,
    documents: bool = False,
) -> ExportReport:
    """Write every definition to ``directory/<kind>/<name>.json``, in spec ``spec`` (0.2.0
    unless asked; 0.1.0 while anyone needs it).

    Only those files are written; other files in the directory are left alone.
    Secret env values are never written (the converters withhold them as null).
    A definition ``spec`` cannot express (a person on side A in 0.1.0 …) is refused with
    the reason, and then nothing is written.
    With ``history``, every version of each agent, prompt and model is also written to
    ``directory/.history/<kind>/<name>.json`` (oldest first, as saved); import skips
    hidden folders. Knowledge bases go to ``knowledge/<name>.json`` and, with ``documents``,
    their documents' files to ``knowledge/<name>/`` (``knowledge_files.py``).
    """
    if directory.exists() and not directory.is_dir():
        raise DefinitionFilesInvalid([f"{directory}: not a directory."])
    report = ExportReport()
    texts = _texts(all_definitions(), spec)
    try:
        for kind in KINDS:
            _export_kind(directory / kind, kind, texts.get(kind, []), report)
        folder = directory / knowledge_files.FOLDER
        _export_kind(folder, knowledge_files.FOLDER, knowledge_files.knowledge_texts(), report)
        if documents:
            report.documents = knowledge_files.export_documents(folder)
        if history:
            _export_history(directory / HISTORY_FOLDER)
    except OSError as exc:
        raise DefinitionFilesInvalid(
            [f"{exc.filename or directory}: cannot write ({exc.strerror or exc})."]
        ) from None
    return report


def _export_kind(
    folder: Path, kind: str, texts: list[tuple[str, str]], report: ExportReport
) -> None:
    if texts:
        folder.mkdir(parents=True, exist_ok=True)
    for name, text in texts:
        path = folder / f"{name}.json"
        label = f"{kind}/{path.name}"
        if not path.exists():
            report.created.append(label)
        elif path.read_text(encoding="utf-8") != text:
            report.updated.append(label)
        else:
            report.unchanged.append(label)
            continue
        path.write_text(text, encoding="utf-8")
    if folder.is_dir():
        names = {f"{name}.json" for name, _ in texts}
        report.stale += [
            f"{kind}/{p.name}"
            for p in sorted(folder.glob("*.json"))
            if p.name not in names and not _ignored(p)
        ]


def _export_history(folder: Path) -> None:
    by_definition: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for v in DefinitionVersion.objects.order_by("kind", "name", "number"):
        by_definition.setdefault((v.kind, v.name), []).append(
            {
                "number": v.number,
                "createdAt": v.created_at.isoformat(),
                "author": v.author_name or None,
                "source": v.source,
                "note": v.note,
                "definition": v.definition,
            }
        )
    for (kind, name), rows in by_definition.items():
        (folder / kind).mkdir(parents=True, exist_ok=True)
        text = json.dumps(rows, indent=2, ensure_ascii=False) + "\n"
        (folder / kind / f"{name}.json").write_text(text, encoding="utf-8")
