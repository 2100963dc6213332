"""Knowledge bases over the API (docs/knowledge.md, docs/api.md "Knowledge bases").

``/api/knowledge``: list, create; ``/api/knowledge/{name}``: read, update, delete;
``/api/knowledge/{name}/documents``: list (status in words, progress), upload (multipart,
the form field ``file``, the studio's checks and 50 MB cap); ``.../documents/{id}``: read,
replace (``POST``, multipart), delete; ``.../documents/{id}/reindex``; and
``POST /api/knowledge/{name}/search`` ``{query, k, filters}``. The studio's permissions on
bases and documents decide who may manage them (``base/permissions.py``); the search answers
anyone the base is offered to, and 404 to others (``services/knowledge/audience.py``).
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from django.db import transaction
from django.http import HttpRequest
from ninja import Router, Status

from agents_app.api.authed import AuthedRequest
from agents_app.api.responses import (
    Bool,
    Int,
    IntOrNull,
    Number,
    Out,
    Str,
    Strings,
)
from agents_app.api.schemas import ERRORS, ErrorOut
from agents_app.base.errors import DomainError, Invalid, NotFound
from agents_app.models.knowledge import KnowledgeBase, KnowledgeDocument
from agents_app.orchestration.knowledge_ingest import enqueue
from agents_app.services.knowledge.audience import offered_base, sees_every_base
from agents_app.services.knowledge.bases import (
    base_definition,
    base_remove,
    base_save,
    parse_definition,
)
from agents_app.services.knowledge.documents import (
    MAX_DOCUMENT_BYTES,
    document_add,
    document_delete,
    document_replace,
    document_requeue,
    status_in_words,
)
from agents_app.services.knowledge.embedding import EmbeddingUnavailable
from agents_app.services.knowledge.search import MAX_K, Filters, search
from agents_app.services.knowledge.tool_host import document_link

router = Router(tags=["knowledge"])


class Unavailable(DomainError):
    """The base's embedding provider cannot embed the query now."""

    status = 503


_FILE_BODY = {
    "requestBody": {
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "properties": {
                        "file": {"type": "string", "format": "binary"},
                        "title": {"type": "string"},
                    },
                    "required": ["file"],
                }
            }
        }
    }
}


class KnowledgeBaseOut(Out):
    name: Str
    description: Str
    embeddingModel: Str
    state: Str
    audience: Strings
    documents: Int
    documentsReady: Int
    createdAt: Str
    updatedAt: Str


class KnowledgeBasesOut(Out):
    knowledgeBases: list[KnowledgeBaseOut]


class KnowledgeBaseOneOut(Out):
    knowledgeBase: KnowledgeBaseOut


class DocumentOut(Out):
    id: Int
    title: Str
    filename: Str
    contentType: Str
    size: Int
    status: Str
    statusText: Str
    failure: Str
    progress: Number
    chunks: Int
    chunksEmbedded: Int
    embeddingTokens: Int
    embeddingCost: Str
    link: Str
    createdAt: Str
    updatedAt: Str


class DocumentsOut(Out):
    documents: list[DocumentOut]


class DocumentOneOut(Out):
    document: DocumentOut


class DocumentReplacedOut(Out):
    document: DocumentOut
    changed: Bool


class DeletedOut(Out):
    success: Bool
    deleted: Str


class PassageOut(Out):
    text: Str
    document: Str
    documentId: Int
    filename: Str
    heading: Str
    page: IntOrNull
    link: Str
    score: Number
    keywordRank: IntOrNull
    vectorRank: IntOrNull


class SearchOut(Out):
    passages: list[PassageOut]


def base_wire(base: KnowledgeBase) -> dict[str, Any]:
    definition = base_definition(base)
    statuses = list(base.documents.values_list("status", flat=True))
    return {
        "name": base.name,
        "description": base.description,
        "embeddingModel": definition.embedding_model,
        "state": base.state,
        "audience": definition.audience,
        "documents": len(statuses),
        "documentsReady": sum(1 for s in statuses if s == "ready"),
        "createdAt": base.created_at.isoformat(),
        "updatedAt": base.updated_at.isoformat(),
    }


def document_wire(document: KnowledgeDocument) -> dict[str, Any]:
    return {
        "id": document.pk,
        "title": document.title,
        "filename": document.filename,
        "contentType": document.content_type,
        "size": document.size,
        "status": document.status,
        "statusText": status_in_words(document),
        "failure": document.failure,
        "progress": round(document.progress, 4),
        "chunks": document.chunk_count,
        "chunksEmbedded": document.chunks_embedded,
        "embeddingTokens": document.embedding_tokens,
        "embeddingCost": str(Decimal(document.embedding_cost).normalize()),
        "link": document_link(document.pk),
        "createdAt": document.created_at.isoformat(),
        "updatedAt": document.updated_at.isoformat(),
    }


def _body(request: HttpRequest) -> dict[str, Any]:
    try:
        data = json.loads(request.body or b"{}")
    except ValueError:
        raise Invalid("Invalid JSON body") from None
    if not isinstance(data, dict):
        raise Invalid("Invalid request: body must be an object")
    return data


def _base(name: str) -> KnowledgeBase:
    base = KnowledgeBase.objects.filter(name=name).first() if len(name) <= 128 else None
    if base is None:
        raise NotFound(f"Knowledge base not found: {name}")
    return base


def _document(name: str, document_id: int) -> KnowledgeDocument:
    document = KnowledgeDocument.objects.filter(pk=document_id, base__name=name).first()
    if document is None:
        raise NotFound(f"Document {document_id} not found in knowledge base {name}")
    return document


def _upload(request: HttpRequest) -> tuple[str, str, bytes]:
    if request.content_type != "multipart/form-data":
        raise Invalid("Send the document as a multipart form upload named file.")
    upload = request.FILES.get("file")
    if upload is None:
        raise Invalid("Send the document as the form field named file.")
    # Read one byte past the cap so an oversized file is refused by its size, not truncated.
    data = upload.read(MAX_DOCUMENT_BYTES + 1)
    return upload.name or "", upload.content_type or "", data


def _enqueue_all(ids: list[int]) -> None:
    for document_id in ids:
        enqueue(document_id)


@router.get("", response={**ERRORS, 200: KnowledgeBasesOut}, summary="List knowledge bases")
def knowledge_list(request: HttpRequest) -> Any:
    bases = KnowledgeBase.objects.prefetch_related("audience_groups")
    return {"knowledgeBases": [base_wire(b) for b in bases]}


@router.post("", response={**ERRORS, 201: KnowledgeBaseOneOut}, summary="Create a knowledge base")
def knowledge_create(request: AuthedRequest) -> Any:
    definition = parse_definition(_body(request))
    base, _ = base_save(definition, create=True)
    return Status(201, {"knowledgeBase": base_wire(base)})


@router.get("/{name}", response={**ERRORS, 200: KnowledgeBaseOneOut}, summary="A knowledge base")
def knowledge_get(request: HttpRequest, name: str) -> Any:
    return {"knowledgeBase": base_wire(_base(name))}


@router.put(
    "/{name}",
    response={**ERRORS, 200: KnowledgeBaseOneOut},
    summary="Update a knowledge base (a new embedding model re-embeds every document)",
)
def knowledge_update(request: AuthedRequest, name: str) -> Any:
    stored = _base(name)
    data = _body(request)
    if "name" in data and data["name"] != name:
        raise Invalid("name: the name is fixed once saved (prompts list it as knowledge:<name>).")
    current = base_definition(stored).model_dump(by_alias=True, mode="json")
    with transaction.atomic():
        base, queued = base_save(parse_definition({**current, **data}), create=False)
        _enqueue_all(queued)
    return {"knowledgeBase": base_wire(base)}


@router.delete("/{name}", response={**ERRORS, 200: DeletedOut}, summary="Delete a knowledge base")
def knowledge_delete(request: HttpRequest, name: str) -> Any:
    with transaction.atomic():
        base_remove(base=_base(name))
    return {"success": True, "deleted": name}


@router.post(
    "/{name}/search",
    response={**ERRORS, 200: SearchOut, 503: ErrorOut},
    summary="Search a knowledge base (hybrid: full text and meaning)",
)
def knowledge_search(request: AuthedRequest, name: str) -> Any:
    base = offered_base(request.auth, name)
    data = _body(request)
    query, k, filters = _search_args(data)
    try:
        found = search(base, query, k, _filters(filters))
    except EmbeddingUnavailable as exc:
        # The reason may name an env value: for those who manage bases only.
        reason = str(exc) if sees_every_base(request.auth) else "ask an administrator."
        raise Unavailable(f"The knowledge base {name} cannot be searched now: {reason}") from None
    return {
        "passages": [
            {
                "text": p.text,
                "document": p.document_title,
                "documentId": p.document_id,
                "filename": p.filename,
                "heading": p.heading_path,
                "page": p.page,
                "link": document_link(p.document_id),
                "score": round(p.score, 5),
                "keywordRank": p.keyword_rank,
                "vectorRank": p.vector_rank,
            }
            for p in found
        ]
    }


def _search_args(data: dict[str, Any]) -> tuple[str, int, Any]:
    unknown = sorted(set(data) - {"query", "k", "filters"})
    if unknown:
        raise Invalid(f"Invalid request: {', '.join(unknown)} is not a search field.")
    query, k = data.get("query"), data.get("k", 5)
    if not isinstance(query, str) or not query.strip():
        raise Invalid("Invalid request: query must be a non-empty string.")
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise Invalid(f"Invalid request: k must be a whole number from 1 to {MAX_K}.")
    return query, k, data.get("filters")


def _filters(raw: Any) -> Filters:
    if raw is None:
        return Filters()
    if not isinstance(raw, dict) or set(raw) - {"documents", "pages"}:
        raise Invalid(
            "Invalid request: filters may hold documents (ids) and pages ([first, last])."
        )
    documents, pages = raw.get("documents"), raw.get("pages")
    if documents is not None and (
        not isinstance(documents, list)
        or not all(isinstance(d, int) and not isinstance(d, bool) for d in documents)
    ):
        raise Invalid("Invalid request: filters.documents must be a list of document ids.")
    if pages is not None and (
        not isinstance(pages, list)
        or len(pages) != 2
        or not all(isinstance(p, int) and not isinstance(p, bool) and p >= 1 for p in pages)
        or pages[0] > pages[1]
    ):
        raise Invalid("Invalid request: filters.pages must be [first, last], pages from 1.")
    return Filters(
        document_ids=documents, pages=(pages[0], pages[1]) if pages is not None else None
    )


@router.get(
    "/{name}/documents",
    response={**ERRORS, 200: DocumentsOut},
    summary="A knowledge base's documents, with their status",
)
def document_list(request: HttpRequest, name: str) -> Any:
    return {"documents": [document_wire(d) for d in _base(name).documents.all()]}


@router.post(
    "/{name}/documents",
    response={**ERRORS, 201: DocumentOneOut},
    summary="Upload a document (queued for indexing)",
    openapi_extra=_FILE_BODY,
)
def document_upload(request: HttpRequest, name: str) -> Any:
    base = _base(name)
    filename, content_type, data = _upload(request)
    title = str(request.POST.get("title") or "")
    with transaction.atomic():
        document = document_add(
            base=base, filename=filename, content_type=content_type, data=data, title=title
        )
        enqueue(document.pk)
    return Status(201, {"document": document_wire(document)})


@router.get(
    "/{name}/documents/{document_id}",
    response={**ERRORS, 200: DocumentOneOut},
    summary="A document and its status",
)
def document_get(request: HttpRequest, name: str, document_id: int) -> Any:
    return {"document": document_wire(_document(name, document_id))}


@router.post(
    "/{name}/documents/{document_id}",
    response={**ERRORS, 200: DocumentReplacedOut},
    summary="Replace a document's file (new bytes are indexed again)",
    openapi_extra=_FILE_BODY,
)
def document_replace_file(request: HttpRequest, name: str, document_id: int) -> Any:
    document = _document(name, document_id)
    filename, content_type, data = _upload(request)
    with transaction.atomic():
        changed = document_replace(
            document=document, filename=filename, content_type=content_type, data=data
        )
        if changed:
            enqueue(document.pk)
    return {"document": document_wire(document), "changed": changed}


@router.delete(
    "/{name}/documents/{document_id}",
    response={**ERRORS, 200: DeletedOut},
    summary="Delete a document and every passage of it",
)
def document_remove(request: HttpRequest, name: str, document_id: int) -> Any:
    with transaction.atomic():
        document_delete(document=_document(name, document_id))
    return {"success": True, "deleted": str(document_id)}


@router.post(
    "/{name}/documents/{document_id}/reindex",
    response={**ERRORS, 200: DocumentOneOut},
    summary="Index a document again from its stored file",
)
def document_reindex(request: HttpRequest, name: str, document_id: int) -> Any:
    document = _document(name, document_id)
    with transaction.atomic():
        document_requeue(document=document)
        enqueue(document.pk)
    document.refresh_from_db()
    return {"document": document_wire(document)}
