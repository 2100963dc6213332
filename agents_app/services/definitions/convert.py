"""Rewrite a folder of definition files for another spec generation (``convert_definitions``).

Only what the generations spell differently changes (``runtime.definitions.generations``);
every other key stays as written. Each converted file is checked before anything is
written: the original and the converted text must load into the same definition (the one
internal model), so a conversion can never change what runs. A file the target cannot
express is reported with the reason and, as with import, then nothing is written.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents_app.services.definitions.files import (
    DefinitionFilesInvalid,
    _parse_text,
    _scan,
    definition_json,
)
from runtime.core.spec import SPEC_0_2, SpecVersion
from runtime.definitions.generations import NotExpressible, convert
from runtime.definitions.source import SourceError
from runtime.definitions.subagent_moves import Moves, apply_to_agent, apply_to_prompt, plan_moves
from runtime.definitions.validation import parse_and_validate
from runtime.mcp.servers import parse_server


@dataclass
class FileChange:
    label: str
    changes: list[str]
    text: str = ""


@dataclass
class ConvertReport:
    changed: list[FileChange] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # with the reason
    written: bool = False


def _load(kind: str, data: Any) -> Any:
    if kind == "mcp":
        return parse_server(data)
    return parse_and_validate(kind, data)


def _same_definition(kind: str, before: Any, after: dict[str, Any], target: SpecVersion) -> bool:
    """Both load, and into definitions that write the same file in ``target``."""
    old, _ = _load(kind, before)
    new, _ = _load(kind, after)
    if old is None or new is None:  # the file's own errors are import's to report
        return (old is None) == (new is None)
    try:
        return bool(definition_json(old, target) == definition_json(new, target))
    except NotExpressible:
        return False


def _read(kind: str, path: Path, errors: list[str]) -> dict[str, Any] | None:
    label = f"{kind}/{path.name}"
    try:
        data = _parse_text(kind, path, path.read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, SourceError) as exc:
        errors.append(f"{label}: cannot be read ({exc}).")
        return None
    if not isinstance(data, dict):
        errors.append(f"{label}: A definition must be a JSON object.")
        return None
    return data


def _moves(read: list[tuple[str, Path, dict[str, Any]]]) -> Moves:
    """0.1.0 prompt-entry subagents moved onto the sides that run those prompts (to 0.2.0)."""
    named = {
        kind: {str(d.get("name")): d for k, _, d in read if k == kind}
        for kind in ("prompts", "agents")
    }
    return plan_moves(named["prompts"], named["agents"])


def _convert_file(
    kind: str,
    path: Path,
    data: dict[str, Any],
    target: SpecVersion,
    moves: Moves,
    report: ConvertReport,
    errors: list[str],
) -> None:
    label = f"{kind}/{path.name}"
    try:
        converted, changes = convert(kind, data, target)
    except NotExpressible as exc:
        errors.append(f"{label}: {exc}")
        return
    # The generation's spelling must load the same (checked below); a move across files
    # changes what each file holds on purpose, so it is applied after the check.
    name = str(data.get("name"))
    moved = moves.changes.get((kind, name), [])
    if not changes and not moved:
        report.unchanged.append(label)
        return
    if not _same_definition(kind, data, converted, target):
        errors.append(f"{label}: the converted file would load differently; left as is.")
        return
    if kind == "prompts" and name in moves.drops:
        converted = apply_to_prompt(converted, moves.drops[name])
    if kind == "agents" and name in moves.adds:
        converted = apply_to_agent(converted, moves.adds[name])
    text = json.dumps(converted, indent=2, ensure_ascii=False) + "\n"
    report.changed.append(FileChange(label, changes + moved, text))


def definitions_convert(*, directory: Path, target: SpecVersion, write: bool) -> ConvertReport:
    """What converting every definition file under ``directory`` to ``target`` changes, file
    by file; with ``write``, the files are rewritten. Raises ``DefinitionFilesInvalid`` (and
    writes nothing) when a file cannot be read or converted."""
    scan = _scan(directory)
    report = ConvertReport()
    errors = list(scan.errors)
    read: list[tuple[str, Path, dict[str, Any]]] = []
    for kind, path in scan.files:
        if path.suffix == ".ts":
            report.skipped.append(
                f"{kind}/{path.name}: left as is (TypeScript files are read, not rewritten; "
                "export_definitions writes them as JSON)."
            )
        elif (data := _read(kind, path, errors)) is not None:
            read.append((kind, path, data))
    moves = _moves(read) if target == SPEC_0_2 else Moves()
    report.skipped += moves.kept
    for kind, path, data in read:
        _convert_file(kind, path, data, target, moves, report, errors)
    if errors:
        raise DefinitionFilesInvalid(errors)
    if write:
        for change in report.changed:
            (directory / change.label).write_text(change.text, encoding="utf-8")
        report.written = True
    return report
