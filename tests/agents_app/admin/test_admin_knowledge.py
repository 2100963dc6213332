"""Knowledge bases in the studio: a base is created with documents uploaded on its page,
each document's status reads in words, and deleting one there removes it with its chunks;
bad names and files are refused on the field they are about."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.template.defaultfilters import filesizeformat
from django.test import Client, override_settings
from django.urls import reverse

from agents_app.models import DocumentStatus, KnowledgeBase, KnowledgeChunk, KnowledgeDocument
from agents_app.services.knowledge.ingestion import document_ingest
from tests.agents_app.admin.admin_pages import errors_of, fill, read_form
from tests.agents_app.services.knowledge.sample_files import docx_bytes

pytestmark = pytest.mark.django_db

ADD = reverse("admin:agents_app_knowledgebase_add")


@pytest.fixture(autouse=True)
def media(tmp_path: Any) -> Iterator[None]:
    with override_settings(MEDIA_ROOT=str(tmp_path)):
        yield


@pytest.fixture
def staff(client: Client, ops: Any) -> Client:
    client.force_login(ops)
    return client


def _files() -> list[SimpleUploadedFile]:
    docx = docx_bytes([("h1", "Leave"), ("p", "Book leave in the portal two weeks ahead.")])
    return [
        SimpleUploadedFile("faq.md", b"# FAQ\n\nThe office opens at nine.", "text/markdown"),
        SimpleUploadedFile(
            "leave.docx",
            docx,
            "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        ),
        SimpleUploadedFile("broken.pdf", b"%PDF-1.4 nothing else", "application/pdf"),
    ]


def test_a_base_is_created_with_its_documents_and_shows_their_status_in_words(
    staff: Client, django_capture_on_commit_callbacks: Any
) -> None:
    form = fill(read_form(staff, ADD), name="handbook", description="Staff handbook")
    with django_capture_on_commit_callbacks() as queued:
        response = staff.post(ADD, {**form, "upload": _files()})
    assert response.status_code == 302, errors_of(response)
    base = KnowledgeBase.objects.get(name="handbook")
    documents = {d.filename: d for d in base.documents.all()}
    assert set(documents) == {"faq.md", "leave.docx", "broken.pdf"}
    assert {d.status for d in documents.values()} == {DocumentStatus.QUEUED}
    assert len(queued) == 3  # one ingestion sent per document, after the commit

    change = reverse("admin:agents_app_knowledgebase_change", args=[base.pk])
    assert "Queued: waiting for a worker" in staff.get(change).content.decode()
    for document in documents.values():
        document_ingest(document.pk)
    page = staff.get(change).content.decode()
    assert page.count("Ready: 1 passage<") == 2
    # Sizes as people read them, never a raw byte count (issue #55's one formatting layer).
    leave = documents["leave.docx"]
    assert filesizeformat(leave.size) in page and f">{leave.size}<" not in page
    assert "Failed: broken.pdf could not be read as PDF" in page


def test_deleting_a_document_on_the_base_page_removes_it_and_its_chunks(
    staff: Client,
) -> None:
    staff.post(ADD, {**fill(read_form(staff, ADD), name="handbook"), "upload": _files()[:2]})
    base = KnowledgeBase.objects.get(name="handbook")
    faq = base.documents.get(filename="faq.md")
    document_ingest(faq.pk)
    assert KnowledgeChunk.objects.filter(document=faq).exists()
    change = reverse("admin:agents_app_knowledgebase_change", args=[base.pk])
    form = read_form(staff, change)
    row = next(k[: -len("-id")] for k, v in form.items() if k.endswith("-id") and v == str(faq.pk))
    response = staff.post(change, {**form, f"{row}-DELETE": "on"})
    assert response.status_code == 302, errors_of(response)
    assert not KnowledgeDocument.objects.filter(pk=faq.pk).exists()
    assert not KnowledgeChunk.objects.filter(document_id=faq.pk).exists()
    assert base.documents.get().filename == "leave.docx"


def test_bad_names_and_files_are_refused_on_their_field(staff: Client) -> None:
    form = read_form(staff, ADD)
    refused = staff.post(
        ADD,
        {
            **fill(dict(form), name="hand book!"),
            "upload": [SimpleUploadedFile("tool.exe", b"MZ", "application/x-msdownload")],
        },
    )
    errors = errors_of(refused)
    assert "name" in errors
    assert "tool.exe is not a format we read" in str(errors["upload"])
    assert not KnowledgeBase.objects.exists()


def test_the_document_page_links_the_file_as_a_download_and_says_its_status(
    staff: Client,
) -> None:
    staff.post(ADD, {**fill(read_form(staff, ADD), name="handbook"), "upload": _files()[:1]})
    document = KnowledgeDocument.objects.get()
    page = staff.get(
        reverse("admin:agents_app_knowledgedocument_change", args=[document.pk])
    ).content.decode()
    download = reverse("admin:agents_app_knowledgedocument_file", args=[document.pk])
    assert download in page and "Queued: waiting for a worker" in page
    response = staff.get(download)
    assert b"".join(response.streaming_content) == b"# FAQ\n\nThe office opens at nine."
    assert response["Content-Disposition"].startswith("attachment")
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Content-Security-Policy"].startswith("sandbox")
    listing = staff.get(reverse("admin:agents_app_knowledgebase_changelist")).content.decode()
    assert "0 of 1" in listing


def test_deleting_a_base_deletes_its_documents_chunks_and_files(
    staff: Client, django_capture_on_commit_callbacks: Any
) -> None:
    staff.post(ADD, {**fill(read_form(staff, ADD), name="handbook"), "upload": _files()[:1]})
    base = KnowledgeBase.objects.get()
    document = base.documents.get()
    document_ingest(document.pk)
    storage, name = document.file.storage, document.file.name
    delete = reverse("admin:agents_app_knowledgebase_delete", args=[base.pk])
    with django_capture_on_commit_callbacks(execute=True):
        assert staff.post(delete, {"post": "yes"}).status_code == 302
    assert not KnowledgeBase.objects.exists()
    assert not KnowledgeChunk.objects.exists() and not KnowledgeDocument.objects.exists()
    assert not storage.exists(name)


def test_people_without_the_view_permission_cannot_download_a_document(
    staff: Client, make_user: Any
) -> None:
    staff.post(ADD, {**fill(read_form(staff, ADD), name="handbook"), "upload": _files()[:1]})
    download = reverse(
        "admin:agents_app_knowledgedocument_file", args=[KnowledgeDocument.objects.get().pk]
    )
    outsider = Client()
    outsider.force_login(make_user("clerk", staff=False))
    assert outsider.get(download).status_code == 302  # to the sign-in page
    from django.contrib.auth.models import Permission

    viewer = make_user("viewer")
    viewer.is_staff = True
    viewer.save()
    viewer.user_permissions.add(Permission.objects.get(codename="view_knowledgebase"))
    outsider.force_login(viewer)
    assert outsider.get(download).status_code == 404  # the base, not its documents
