"""No active content from user files: MIME types are normalized or refused on write, and every
response carrying a thread file's bytes (raw, streamed, thumbnail) or a thread endpoint's is
served inert: nosniff, a CSP that sandboxes and blocks every fetch, ``attachment`` unless the
type is on the inline allow-list. The browser half is tests/browser/test_user_files_inert.py."""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any

import pytest
from django.http import HttpResponse, StreamingHttpResponse
from PIL import Image

from agents_app.base.code_registry import reset_registry
from agents_app.models import ThreadFile
from agents_app.services.threads import files as thread_files
from runtime.tools.registry import Registry, define_thread_endpoint
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)

HTML = b"<html><body><script>window.__ran = 1</script></body></html>"
SANDBOX = "sandbox; default-src 'none'; style-src 'unsafe-inline'"

# (MIME type as the client wrote it, what is stored, disposition served)
VARIANTS = [
    ("text/html", "text/html", "attachment"),
    (" text/html", "text/html", "attachment"),
    ("TEXT/HTML", "text/html", "attachment"),
    ("IMAGE/SVG+XML", "image/svg+xml", "attachment"),
    ("image/svg+xml", "image/svg+xml", "attachment"),
    ("text/xml", "text/xml", "attachment"),
    ("application/xml", "application/xml", "attachment"),
    ("text/xsl", "text/xsl", "attachment"),
    ("application/xhtml+xml", "application/xhtml+xml", "attachment"),
    ("text/javascript", "text/javascript", "attachment"),
    ("application/octet-stream", "application/octet-stream", "attachment"),
    ("multipart/x-mixed-replace", "multipart/x-mixed-replace", "attachment"),
    ("text/plain", "text/plain", "inline"),
    ("Text/Plain; Charset=UTF-8", "text/plain; charset=UTF-8", "inline"),
    ("image/png", "image/png", "inline"),
    ("IMAGE/JPEG", "image/jpeg", "inline"),
    ("image/gif", "image/gif", "inline"),
    ("image/webp", "image/webp", "inline"),
    ("application/pdf", "application/pdf", "inline"),
]


@pytest.fixture(autouse=True)
def media(settings: Any, tmp_path: Path) -> Path:
    settings.MEDIA_ROOT = str(tmp_path)
    return tmp_path


def assert_inert(response: Any, disposition: str) -> None:
    assert response["X-Content-Type-Options"] == "nosniff"
    csp = response["Content-Security-Policy"]
    assert "default-src 'none'" in csp
    if response["Content-Type"] != "application/pdf":  # Chromium's viewer refuses sandboxing
        assert csp.startswith("sandbox;")
    assert response["Content-Disposition"].split(";")[0] == disposition


@pytest.mark.django_db
@pytest.mark.parametrize(("sent", "stored", "disposition"), VARIANTS)
def test_user_file_never_served_active_raw_upload(
    as_: Any, alice: Any, thread_of: Any, sent: str, stored: str, disposition: str
) -> None:
    thread = thread_of(alice)
    client = as_(alice)
    url = f"/api/threads/{thread.pk}/fs/up/f.bin"
    assert client.post(url, HTML, content_type=sent).status_code == 201
    assert ThreadFile.objects.get(thread=thread, path="/up/f.bin").mime_type == stored
    response = client.get(url)
    assert response.content == HTML
    assert_inert(response, disposition)
    assert response["Content-Type"] == stored


@pytest.mark.django_db
@pytest.mark.parametrize(("sent", "stored", "disposition"), VARIANTS)
def test_user_file_never_served_active_json_upload(
    as_: Any, alice: Any, thread_of: Any, sent: str, stored: str, disposition: str
) -> None:
    thread = thread_of(alice)
    client = as_(alice)
    url = f"/api/threads/{thread.pk}/fs/f.html"
    body = {"data": base64.b64encode(HTML).decode(), "mimeType": sent}
    assert client.post_json(url, body).status_code == 201
    assert ThreadFile.objects.get(thread=thread, path="/f.html").mime_type == stored
    assert_inert(client.get(url), disposition)


@pytest.mark.django_db
@pytest.mark.parametrize(("sent", "stored", "disposition"), VARIANTS[:8])
def test_user_file_never_served_active_message_attachment(
    as_: Any, alice: Any, thread_of: Any, sent: str, stored: str, disposition: str
) -> None:
    thread = thread_of(alice)
    client = as_(alice)
    attachment = {"name": "a.html", "mimeType": sent, "data": base64.b64encode(HTML).decode()}
    posted = client.post_json(
        f"/api/threads/{thread.pk}/messages", {"content": "see", "attachments": [attachment]}
    )
    assert posted.status_code in (200, 201, 202), posted.content
    row = ThreadFile.objects.get(thread=thread, path__startswith="/attachments/")
    assert row.mime_type == stored
    assert_inert(client.get(f"/api/threads/{thread.pk}/fs{row.path}"), disposition)


@pytest.mark.django_db
@pytest.mark.parametrize(
    "bad",
    ["text", "text/ html", "text/html<script>", "text/html; charset", "x/" + "y" * 300],
)
def test_malformed_mime_types_are_a_json_400(
    as_: Any, alice: Any, thread_of: Any, bad: str
) -> None:
    thread = thread_of(alice)
    client = as_(alice)
    url = f"/api/threads/{thread.pk}/fs/f.bin"
    body = {"data": base64.b64encode(b"x").decode(), "mimeType": bad}
    for response in (client.post_json(url, body), client.post(url, b"x", content_type=bad)):
        assert response.status_code == 400, response.content
        assert "MIME type" in response.json()["error"]
    assert not ThreadFile.objects.filter(thread=thread, path="/f.bin").exists()


@pytest.mark.django_db
def test_user_file_never_served_active_when_stored_before_normalization(
    as_: Any, alice: Any, thread_of: Any
) -> None:
    """Rows written before types were normalized are read the way a browser reads them."""
    thread = thread_of(alice)
    client = as_(alice)
    for i, legacy in enumerate([" TEXT/HTML", "IMAGE/SVG+XML", "text/html ; x", "nonsense"]):
        thread_files.file_write(thread, f"/old{i}.html", HTML, "text/plain")
        ThreadFile.objects.filter(thread=thread, path=f"/old{i}.html").update(mime_type=legacy)
        response = client.get(f"/api/threads/{thread.pk}/fs/old{i}.html")
        assert_inert(response, "attachment")
        assert response["Content-Type"] in {
            "text/html",
            "image/svg+xml",
            "application/octet-stream",
        }


@pytest.mark.django_db
def test_user_file_never_served_active_streamed_chunked(
    settings: Any, as_: Any, alice: Any, thread_of: Any
) -> None:
    settings.STUDIO_FILE_CHUNK_SIZE = 16
    thread = thread_of(alice)
    client = as_(alice)
    url = f"/api/threads/{thread.pk}/fs/big.svg"
    assert client.post(url, HTML * 3, content_type="IMAGE/SVG+XML").status_code == 201
    response = client.get(url)
    assert isinstance(response, StreamingHttpResponse)
    assert b"".join(response.streaming_content) == HTML * 3
    assert_inert(response, "attachment")


@pytest.mark.django_db
def test_user_file_never_served_active_thumbnail(as_: Any, alice: Any, thread_of: Any) -> None:
    thread = thread_of(alice)
    client = as_(alice)
    png = io.BytesIO()
    Image.new("RGB", (64, 48), (10, 200, 30)).save(png, "PNG")
    url = f"/api/threads/{thread.pk}/fs/p.png"
    assert client.post(url, png.getvalue(), content_type="image/png").status_code == 201
    thumb = client.get(url + "?thumbnail=1")
    assert thumb["Content-Type"] == "image/jpeg"
    assert_inert(thumb, "inline")
    assert thumb["Cache-Control"].startswith("private")


@pytest.mark.django_db
def test_user_file_served_with_its_name_in_the_disposition(
    as_: Any, alice: Any, thread_of: Any
) -> None:
    thread = thread_of(alice)
    client = as_(alice)
    url = f"/api/threads/{thread.pk}/fs/r%C3%A9sum%C3%A9%20%22x%22.html"
    assert client.post(url, HTML, content_type="text/html").status_code == 201
    disposition = client.get(url)["Content-Disposition"]
    assert disposition.startswith("attachment; filename")
    assert "filename*=utf-8''r%C3%A9sum%C3%A9%20%22x%22.html" in disposition


# --- thread endpoints --------------------------------------------------------------------


@pytest.fixture
def endpoints() -> Any:
    def html(request: Any, state: Any, params: dict[str, str]) -> HttpResponse:
        return HttpResponse(HTML, content_type="TEXT/HTML")

    def svg(request: Any, state: Any, params: dict[str, str]) -> HttpResponse:
        response = HttpResponse(HTML, content_type="image/svg+xml")
        response["Content-Disposition"] = "inline"  # a careless handler
        response["Content-Security-Policy"] = "script-src *"
        return response

    def data(request: Any, state: Any, params: dict[str, str]) -> dict[str, Any]:
        return {"ok": True}

    def page(request: Any, state: Any, params: dict[str, str]) -> HttpResponse:
        return HttpResponse(HTML, content_type="text/html")

    reset_registry(
        Registry(
            define_thread_endpoint(html, route="/html"),
            define_thread_endpoint(svg, route="/svg"),
            define_thread_endpoint(data, route="/data"),
            define_thread_endpoint(page, route="/page", active_content=True),
        )
    )
    yield
    reset_registry(None)


@pytest.mark.django_db
def test_thread_endpoint_responses_get_the_safe_defaults(
    as_: Any, alice: Any, thread_of: Any, endpoints: Any
) -> None:
    thread = thread_of(alice)
    client = as_(alice)
    base = f"/api/threads/{thread.pk}"
    assert_inert(client.get(base + "/html"), "attachment")
    svg = client.get(base + "/svg")
    assert_inert(svg, "attachment")
    assert svg["Content-Security-Policy"] == SANDBOX
    data = client.get(base + "/data")
    assert data.json() == {"ok": True}
    assert_inert(data, "inline")


@pytest.mark.django_db
def test_thread_endpoint_opted_out_with_active_content_is_sent_as_built(
    as_: Any, alice: Any, thread_of: Any, endpoints: Any
) -> None:
    thread = thread_of(alice)
    response = as_(alice).get(f"/api/threads/{thread.pk}/page")
    assert response.content == HTML
    assert "Content-Security-Policy" not in response
    assert "Content-Disposition" not in response
