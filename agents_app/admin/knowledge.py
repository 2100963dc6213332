"""Knowledge bases in the studio: a base's page lists its documents with their status in
words, takes new ones (upload), and deletes them (docs/knowledge.md)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import FileResponse, Http404, HttpRequest
from django.template.defaultfilters import filesizeformat
from django.urls import path, reverse
from django.utils.html import format_html

from agents_app.models.knowledge import DocumentStatus, KnowledgeBase, KnowledgeDocument
from agents_app.orchestration.knowledge_ingest import enqueue
from agents_app.services.knowledge.bases import base_reembed
from agents_app.services.knowledge.documents import (
    base_delete,
    document_add,
    document_delete,
    document_requeue,
    status_in_words,
    upload_problem,
)
from agents_app.services.knowledge.embedding import embedding_model_problem, normalised_model
from agents_app.services.knowledge.search import search_indexes_description
from runtime.core.definition_errors import check_name


class _MultipleFiles(forms.ClearableFileInput):
    allow_multiple_selected = True


class _Uploads(forms.FileField):
    """Several files in one field (Django's documented recipe)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("widget", _MultipleFiles())
        super().__init__(*args, **kwargs)

    def clean(self, data: Any, initial: Any = None) -> Any:
        single = super().clean
        if isinstance(data, list | tuple):
            return [single(d, initial) for d in data]
        return [single(data, initial)] if data else []


class KnowledgeBaseForm(forms.ModelForm):
    upload = _Uploads(
        required=False,
        label="Add documents",
        help_text="PDF, DOCX, HTML, Markdown or plain text; each is indexed by the workers "
        "after you save, and its status shows below.",
    )

    class Meta:
        model = KnowledgeBase
        fields = ("name", "description", "embedding_model", "state", "audience_groups")
        widgets = {"embedding_model": forms.TextInput(attrs={"size": 40})}

    def clean_embedding_model(self) -> str:
        value: str = self.cleaned_data.get("embedding_model") or ""
        problem = embedding_model_problem(value)
        if problem:
            raise forms.ValidationError(problem)
        return normalised_model(value)

    def clean_upload(self) -> list[Any]:
        uploads: list[Any] = self.cleaned_data.get("upload") or []
        problems = [
            upload_problem(u.name or "", u.content_type or "", u.size or 0) for u in uploads
        ]
        if any(problems):
            raise forms.ValidationError([p for p in problems if p])
        return uploads

    def clean_name(self) -> str:
        name: str = self.cleaned_data["name"]
        errs = check_name(name)
        if errs:
            raise forms.ValidationError(errs[0].message)
        return name


class DocumentInline(admin.TabularInline):
    model = KnowledgeDocument
    extra = 0
    can_delete = True
    show_change_link = True
    fields = ("title", "filename", "status_words", "size_words", "updated_at")
    readonly_fields = fields

    @admin.display(description="status")
    def status_words(self, obj: KnowledgeDocument) -> str:
        return status_in_words(obj)

    @admin.display(description="size")
    def size_words(self, obj: KnowledgeDocument) -> str:
        return filesizeformat(obj.size)

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # documents are added with the upload field above


@admin.register(KnowledgeBase)
class KnowledgeBaseAdmin(admin.ModelAdmin):
    empty_help = (
        "No knowledge bases yet. A knowledge base is a set of documents agents search and "
        "cite: add one, upload its documents, then list it in a prompt's tools as "
        "knowledge:NAME."
    )
    form = KnowledgeBaseForm
    list_display = ("name", "description", "documents_ready")
    search_fields = ("name", "description")
    inlines = [DocumentInline]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        # Prompts name it (knowledge:NAME): a new name would break them.
        return ("name", "search_indexes") if obj is not None else ()

    @admin.display(description="search indexes")
    def search_indexes(self, obj: KnowledgeBase) -> str:
        return search_indexes_description()

    @admin.display(description="documents ready")
    def documents_ready(self, obj: KnowledgeBase) -> str:
        docs = list(obj.documents.values_list("status", flat=True))
        ready = sum(1 for s in docs if s == DocumentStatus.READY)
        return f"{ready} of {len(docs)}"

    def save_model(self, request: HttpRequest, obj: KnowledgeBase, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        if change and "embedding_model" in form.changed_data:  # every document re-embedded
            for document_id in base_reembed(base=obj):
                enqueue(document_id)
        for upload in form.cleaned_data.get("upload") or []:
            document = document_add(
                base=obj,
                filename=upload.name,
                content_type=upload.content_type or "",
                data=upload.read(),
            )
            enqueue(document.pk)

    def delete_model(self, request: HttpRequest, obj: KnowledgeBase) -> None:
        base_delete(base=obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[KnowledgeBase]) -> None:
        for base in queryset:
            base_delete(base=base)

    def save_formset(self, request: HttpRequest, form: Any, formset: Any, change: bool) -> None:
        formset.save(commit=False)
        for document in formset.deleted_objects:  # the one delete: chunks and stored file
            document_delete(document=document)


@admin.register(KnowledgeDocument)
class KnowledgeDocumentAdmin(admin.ModelAdmin):
    list_display = ("title", "base", "status_words", "chunk_count", "updated_at")
    list_filter = ("base", "status")
    search_fields = ("title", "filename")
    readonly_fields = (
        "base",
        "open_file",
        "filename",
        "content_type",
        "size_words",
        "content_hash",
        "status_words",
        "chunk_count",
        "created_at",
        "updated_at",
    )
    fields = ("title", *readonly_fields)
    actions = ["index_again"]

    @admin.display(description="status")
    def status_words(self, obj: KnowledgeDocument) -> str:
        return status_in_words(obj)

    @admin.display(description="size")
    def size_words(self, obj: KnowledgeDocument) -> str:
        return filesizeformat(obj.size)

    @admin.display(description="document")
    def open_file(self, obj: KnowledgeDocument) -> str:
        url = reverse("admin:agents_app_knowledgedocument_file", args=[obj.pk])
        return format_html('<a href="{}">{}</a>', url, obj.filename)

    def get_urls(self) -> list[Any]:
        download = self.admin_site.admin_view(self.download)
        own = [path("<int:pk>/file/", download, name="agents_app_knowledgedocument_file")]
        return own + super().get_urls()

    def download(self, request: HttpRequest, pk: int) -> FileResponse:
        """The stored file, always as a download: its bytes are someone's upload (an HTML
        file would otherwise run as the person who opens it; docs/security.md "Serving
        user files" has the same rules for thread files)."""
        document = self.get_object(request, str(pk))
        if document is None or not self.has_view_permission(request, document):
            raise Http404("No such document.")
        response = FileResponse(
            document.file.open("rb"),
            as_attachment=True,
            filename=document.filename,
            content_type="application/octet-stream",
        )
        response["X-Content-Type-Options"] = "nosniff"
        response["Content-Security-Policy"] = "sandbox; default-src 'none'"
        return response

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # uploaded on the knowledge base's page

    def delete_model(self, request: HttpRequest, obj: KnowledgeDocument) -> None:
        document_delete(document=obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[KnowledgeDocument]) -> None:
        for document in queryset:
            document_delete(document=document)

    @admin.action(description="Index the selected documents again", permissions=["change"])
    def index_again(self, request: HttpRequest, queryset: QuerySet[KnowledgeDocument]) -> None:
        for document in queryset:
            document_requeue(document=document)
            enqueue(document.pk)
        self.message_user(request, f"{queryset.count()} document(s) queued.", messages.SUCCESS)
