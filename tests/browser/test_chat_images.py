"""Images in the chat page: attach (button, drop, paste), refusals before sending, the reply
streams, the model's request holds the image (thread inspector), images open larger."""

from __future__ import annotations

import base64
import io
import re
from pathlib import Path

from PIL import Image
from playwright.sync_api import Browser, Page, expect

from tests.browser.support import Site, admin_login, chat_login, frames, shot

expect.set_options(timeout=15_000)

AGENT = "vision_agent"
REPLY = "I can see a red square on a white background."

# A test-provider model that fails the request unless it carries exactly one PNG image.
DEFINE = f"""
from agents_app.services.definitions.saves import save_definitions
from runtime.core.spec import AgentDefinition, ModelDefinition, PromptDefinition, SideConfig
model = ModelDefinition(
    name="vision_model", provider="test", model="scripted",
    script=[{{"content": {REPLY!r}, "expectInput": {{"imageCount": 1, "attachmentTypes": ["image/png"]}}}}],
    streaming={{"chunkSize": 3, "chunkDelayMs": 40}},
)
prompt = PromptDefinition(name="vision_prompt", model="vision_model", prompt="Describe images.")
agent = AgentDefinition(name={AGENT!r}, title="Vision helper", side_a=SideConfig(prompt="vision_prompt"))
save_definitions([("model", model), ("prompt", prompt), ("agent", agent)], strict_code_names=False)
"""


def _png(path: Path, color: tuple[int, int, int], size: tuple[int, int] = (320, 240)) -> Path:
    image = Image.new("RGB", size, (255, 255, 255))
    image.paste(Image.new("RGB", (size[0] // 2, size[1] // 2), color), (size[0] // 4, size[1] // 4))
    image.save(path, format="PNG")
    return path


def _png_b64(color: tuple[int, int, int]) -> str:
    out = io.BytesIO()
    Image.new("RGB", (40, 30), color).save(out, format="PNG")
    return base64.b64encode(out.getvalue()).decode()


# Builds a File in the page and fires a drop or paste event carrying it (what a real drag or
# Ctrl+V delivers to the page: a DataTransfer whose files hold the image).
FIRE = """([kind, b64, name]) => {
  const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  const transfer = new DataTransfer();
  transfer.items.add(new File([bytes], name, { type: 'image/png' }));
  if (kind === 'drop') {
    const target = document.getElementById('composer');
    target.dispatchEvent(new DragEvent('dragover', { dataTransfer: transfer, bubbles: true, cancelable: true }));
    target.dispatchEvent(new DragEvent('drop', { dataTransfer: transfer, bubbles: true, cancelable: true }));
  } else {
    const event = new ClipboardEvent('paste', { clipboardData: transfer, bubbles: true, cancelable: true });
    document.getElementById('composer-input').dispatchEvent(event);
  }
}"""


def test_an_attached_image_reaches_the_model_and_opens_larger(
    page: Page, site: Site, browser: Browser, tmp_path: Path
) -> None:
    site.python(DEFINE)
    seen = frames(page)
    chat_login(page, site, "alice", then=f"/chat/?agent={AGENT}")
    expect(page.get_by_label("Agent")).to_have_value(AGENT)

    # Refused before sending, with the reason: a text file, then an image too large.
    notes = tmp_path / "notes.txt"
    notes.write_text("not an image")
    page.locator("#file-input").set_input_files(str(notes))
    expect(page.locator("#attach-error")).to_contain_text(
        "notes.txt (text/plain) can't be attached"
    )
    expect(page.locator("#attachments .chip")).to_have_count(0)

    # Drop and paste put images in the composer too; remove them again.
    page.evaluate(FIRE, ["drop", _png_b64((0, 0, 255)), "dropped.png"])
    page.evaluate(FIRE, ["paste", _png_b64((0, 255, 0)), "pasted.png"])
    chips = page.locator("#attachments .chip")
    expect(chips).to_have_count(2)
    expect(chips.nth(0)).to_contain_text("dropped.png")
    expect(chips.nth(1)).to_contain_text("pasted.png")
    page.get_by_role("button", name="Remove dropped.png").click()
    page.get_by_role("button", name="Remove pasted.png").click()
    expect(chips).to_have_count(0)

    # The button: a preview with name and size, then send.
    square = _png(tmp_path / "square.png", (220, 20, 20))
    page.locator("#file-input").set_input_files(str(square))
    expect(chips).to_have_count(1)
    expect(chips.first).to_contain_text("square.png")
    expect(chips.first.locator(".chip-size")).to_have_text(re.compile(r"\d+(\.\d)? (B|KB)"))
    expect(page.locator("#attach-error")).to_be_hidden()
    shot(page, "chat-image-composer")
    box = page.get_by_label("Message")
    box.fill("What is in this picture?")
    box.press("Enter")
    page.wait_for_url("**/chat/t/**")

    reply = page.locator("article.msg-assistant").last
    expect(reply).to_contain_text(REPLY, timeout=30_000)
    assert any('"message_chunk"' in f for f in seen), "the reply did not stream"
    expect(page.locator("#state")).to_have_attribute("data-state", "idle", timeout=30_000)

    # The image in the transcript opens larger in the page.
    thumb = page.locator("article.msg-user .msg-attachments img").first
    expect(thumb).to_be_visible()
    thumb.click()
    dialog = page.locator("#lightbox")
    expect(dialog).to_be_visible()
    expect(dialog.locator("figcaption")).to_have_text("square.png")
    box_size = dialog.locator("img").bounding_box()
    thumb_size = thumb.bounding_box()
    assert box_size and thumb_size and box_size["width"] > thumb_size["width"]
    shot(page, "chat-image-lightbox")
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    shot(page, "chat-image-thread")
    thread_id = page.url.rstrip("/").rsplit("/", 1)[-1]
    assert page.console_errors == []  # type: ignore[attr-defined]

    # The studio's thread inspector: the request the model got carries the image part
    # (a size note in place of the base64), and the message shows the picture.
    studio = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    admin_login(studio, site)
    studio.goto(f"{site.url}/admin/agents_app/thread/{thread_id}/change/")
    logs = studio.locator("#inspector-logs")
    expect(logs).to_contain_text("vision_model")
    expect(logs).to_contain_text('"type": "image_url"')
    expect(logs).to_contain_text("data:image/png;base64,[base64: ")
    expect(studio.locator("#inspector-messages .studio-attachments img")).to_have_count(1)
    logs.locator("summary").first.click()
    shot(studio, "studio-inspector-image")
    studio.context.close()


def test_the_composer_with_an_image_at_phone_width(
    phone_page: Page, site: Site, tmp_path: Path
) -> None:
    site.python(DEFINE)
    page = phone_page
    chat_login(page, site, "bob", then=f"/chat/?agent={AGENT}")
    page.locator("#file-input").set_input_files(str(_png(tmp_path / "phone.png", (20, 120, 220))))
    expect(page.locator("#attachments .chip")).to_contain_text("phone.png")
    page.get_by_label("Message").fill("And this one?")
    page.get_by_role("button", name="Send").click()
    page.wait_for_url("**/chat/t/**")
    expect(page.locator("article.msg-assistant").last).to_contain_text(REPLY, timeout=30_000)
    page.locator("article.msg-user .msg-attachments img").first.click()
    expect(page.locator("#lightbox")).to_be_visible()
    shot(page, "chat-image-phone-lightbox")
    page.keyboard.press("Escape")
    shot(page, "chat-image-phone-thread")
    assert page.console_errors == []  # type: ignore[attr-defined]


def _artist_definitions() -> str:
    out = io.BytesIO()
    image = Image.new("RGB", (480, 320), (250, 240, 200))
    image.paste(Image.new("RGB", (200, 120), (30, 110, 200)), (140, 100))
    image.save(out, format="PNG")
    picture = base64.b64encode(out.getvalue()).decode()
    return f"""
from agents_app.services.definitions.saves import save_definitions
from runtime.core.spec import AgentDefinition, ModelDefinition, PromptDefinition, SideConfig
model = ModelDefinition(
    name="artist_model", provider="test", model="scripted",
    script=[{{"content": "Here is a blue rectangle for you.", "images": [{{"mimeType": "image/png", "data": {picture!r}}}]}}],
    streaming={{"chunkSize": 3, "chunkDelayMs": 40}},
)
prompt = PromptDefinition(name="artist_prompt", model="artist_model", prompt="Draw.")
agent = AgentDefinition(name="artist_agent", title="Artist", side_a=SideConfig(prompt="artist_prompt"))
save_definitions([("model", model), ("prompt", prompt), ("agent", agent)], strict_code_names=False)
"""


def test_a_generated_image_shows_in_the_reply_as_it_streams(page: Page, site: Site) -> None:
    site.python(_artist_definitions())
    seen = frames(page)
    chat_login(page, site, "charlie", then="/chat/?agent=artist_agent")
    box = page.get_by_label("Message")
    box.fill("Draw me a rectangle")
    box.press("Enter")
    page.wait_for_url("**/chat/t/**")
    reply = page.locator("article.msg-assistant").last
    picture = reply.locator("img[alt='Generated image generated-1.png']")
    expect(picture).to_be_visible(timeout=30_000)
    expect(reply).to_contain_text("Here is a blue rectangle for you.", timeout=30_000)
    assert any('"message_image"' in f for f in seen), "the image was not announced while streaming"
    picture.click()
    expect(page.locator("#lightbox figcaption")).to_have_text("generated-1.png")
    shot(page, "chat-generated-image-lightbox")
    page.keyboard.press("Escape")
    shot(page, "chat-generated-image")
    assert page.console_errors == []  # type: ignore[attr-defined]
