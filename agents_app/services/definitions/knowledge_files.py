"""Knowledge bases in a definitions directory (docs/knowledge.md, "Import and export").

``knowledge/<name>.json`` holds a base's definition (``services/knowledge/bases.py``:
name, description, embeddingModel, state, audience); ``knowledge/<name>/`` may hold its
documents as files. Importing saves each base, adds each file as a document (a file whose
name the base already has replaces it: new bytes are indexed again, the same bytes change
nothing) and returns the documents queued for ingestion; the caller enqueues them after the
commit. Exporting writes every base's definition and, when asked, each document's stored
bytes beside it.
"""

from __future__ import annotations

import json
import mimetypes
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from agents_app.base.errors import Invalid
from agents_app.models.knowledge import KnowledgeBase
from agents_app.services.knowledge.bases import (
    KnowledgeBaseDefinition,
    base_definition,
    base_save,
    parse_definition,
)
from agents_app.services.knowledge.documents import (
    document_add,
    document_replace,
    upload_problem,
)

FOLDER = "knowledge"


@dataclass
class KnowledgeItem:
    label: str
    definition: KnowledgeBaseDefinition
    documents: list[Path] = field(default_factory=list)


def read_knowledge(
    root: Path, models: Mapping[str, str] | None = None
) -> tuple[list[KnowledgeItem], list[str]]:
    """Every well-formed base under ``root/knowledge/`` and one line per problem
    (``models``: the model definitions of the same directory, name → provider)."""
    folder = root / FOLDER
    if not folder.is_dir():
        return [], []
    items: list[KnowledgeItem] = []
    errors: list[str] = []
    entries = [e for e in sorted(folder.iterdir()) if not e.name.startswith(".")]
    defined = {e.stem for e in entries if e.is_file() and e.suffix == ".json"}
    for entry in entries:
        label = f"{FOLDER}/{entry.name}"
        if entry.is_dir():
            if entry.name not in defined:
                errors.append(f"{label}/: documents of no base (add {FOLDER}/{entry.name}.json).")
            continue
        if entry.suffix != ".json":
            errors.append(f"{label}: not a knowledge base file (.json, or a folder of documents).")
            continue
        item, problems = _load(entry, label, models)
        errors += problems
        if item is not None:
            items.append(item)
    return items, errors


def _load(
    path: Path, label: str, models: Mapping[str, str] | None
) -> tuple[KnowledgeItem | None, list[str]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
        definition = parse_definition(data, models=models)
    except (OSError, UnicodeDecodeError) as exc:
        return None, [f"{label}: cannot be read ({exc})."]
    except json.JSONDecodeError as exc:
        return None, [f"{label}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}."]
    except Invalid as exc:
        return None, [f"{label}: {exc}"]
    if definition.name != path.stem:
        return None, [
            f"{label}: name: The name '{definition.name}' does not match the file name; "
            f"rename the file to {definition.name}.json or change the name."
        ]
    documents, errors = _documents(path.with_suffix(""))
    return KnowledgeItem(label, definition, documents), errors


def _documents(folder: Path) -> tuple[list[Path], list[str]]:
    if not folder.is_dir():
        return [], []
    files, errors = [], []
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith("."):
            continue
        label = f"{FOLDER}/{folder.name}/{entry.name}"
        if entry.is_dir():
            errors.append(f"{label}/: folders inside a base's documents are not read.")
            continue
        problem = upload_problem(entry.name, _content_type(entry), entry.stat().st_size)
        if problem:
            errors.append(f"{label}: {problem}")
        else:
            files.append(entry)
    return files, errors


def _content_type(path: Path) -> str:
    return mimetypes.guess_type(path.name)[0] or ""


def save_knowledge(items: list[KnowledgeItem]) -> list[int]:
    """Save each base and its documents (inside the caller's transaction); the documents
    queued for ingestion."""
    queued: list[int] = []
    for item in items:
        base, again = base_save(item.definition)
        queued += again
        have = {d.filename: d for d in base.documents.all()}
        for path in item.documents:
            data = path.read_bytes()
            known = have.get(path.name)
            if known is None:
                document = document_add(
                    base=base, filename=path.name, content_type=_content_type(path), data=data
                )
                queued.append(document.pk)
            elif document_replace(
                document=known, filename=path.name, content_type=_content_type(path), data=data
            ):
                queued.append(known.pk)
    return sorted(set(queued))


def knowledge_texts() -> list[tuple[str, str]]:
    """(name, file text) of every base's definition."""
    return [
        (
            base.name,
            json.dumps(base_definition(base).model_dump(by_alias=True, mode="json"), indent=2)
            + "\n",
        )
        for base in KnowledgeBase.objects.prefetch_related("audience_groups")
    ]


def export_documents(folder: Path) -> list[str]:
    """Write each base's documents to ``folder/<name>/<filename>``; the labels written."""
    written = []
    for base in KnowledgeBase.objects.all():
        for document in base.documents.all():
            target = folder / base.name / document.filename
            target.parent.mkdir(parents=True, exist_ok=True)
            with document.file.open("rb") as f:
                target.write_bytes(f.read())
            written.append(f"{FOLDER}/{base.name}/{document.filename}")
    return written
