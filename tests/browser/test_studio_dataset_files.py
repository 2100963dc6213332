"""Issue #55 item 2 in Chromium: an eval dataset kept as a file. A dataset's page downloads it
("Download as a file", the JSON ``manage.py export_eval_dataset`` writes); the list's "Upload
a dataset file" reads that file back into a dataset of the file's name, says what it changed
in words, and refuses a broken file with a sentence on the form (never a stack trace). Looked
at in 1440 and 390 px, light and dark, with screenshots."""

from __future__ import annotations

import json
from pathlib import Path

from playwright.sync_api import Page, expect

from tests.browser.support import Site, admin_login, shot

expect.set_options(timeout=20_000)

LOOKS = [(scheme, width) for scheme in ("light", "dark") for width in (1440, 390)]

SETUP = """
from agents_app.models import EvalDataset
from agents_app.services.evals import checks as evals
EvalDataset.objects.filter(name__in=["greetings-file", "greetings-copy"]).delete()
dataset = EvalDataset.objects.create(name="greetings-file", description="Hello cases")
evals.case_save(dataset=dataset, name="says hello", checks=[],
    messages=[{"role": "user", "content": "Say hello to Ada."}])
evals.case_save(dataset=dataset, name="says goodbye", checks=[],
    messages=[{"role": "user", "content": "Say goodbye to Ada."}])
print(dataset.pk)
"""


def _fits(page: Page, width: int) -> None:
    # Nothing on the page reaches past the window's right edge (no sideways scroll).
    overflow = page.evaluate("document.documentElement.scrollWidth")
    assert overflow <= width, (overflow, width)


def test_a_dataset_goes_to_a_file_and_comes_back(site: Site, page: Page, tmp_path: Path) -> None:
    pk = int(site.python(SETUP).strip().splitlines()[-1])
    admin_login(page, site)
    page.goto(f"{site.url}/admin/agents_app/evaldataset/{pk}/change/")
    with page.expect_download() as caught:
        page.get_by_role("link", name="Download as a file").click()
    saved = tmp_path / "greetings.json"
    caught.value.save_as(saved)
    data = json.loads(saved.read_text())
    assert data["name"] == "greetings-file"
    assert sorted(case["name"] for case in data["cases"]) == ["says goodbye", "says hello"]

    # The same file under another name, one case changed: what a repository would commit.
    data["name"] = "greetings-copy"
    data["cases"] = [c for c in data["cases"] if c["name"] == "says hello"]
    copy = tmp_path / "greetings-copy.json"
    copy.write_text(json.dumps(data))
    broken = tmp_path / "broken.json"
    broken.write_text('{"name": "x", "cases": [')

    for scheme, width in LOOKS:
        page.emulate_media(color_scheme=scheme)  # type: ignore[arg-type]
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"{site.url}/admin/agents_app/evaldataset/upload/")
        page.get_by_label("Dataset file").set_input_files(str(broken))
        page.get_by_role("button", name="Upload").click()
        error = page.locator(".errorlist")
        expect(error).to_be_visible()
        assert "Traceback" not in page.content()
        words = error.inner_text().strip()
        assert words.startswith("This is not a JSON dataset file (line 1, column 25)"), words
        assert "Expecting" not in words and "char" not in words, words  # the decoder's terms
        _fits(page, width)
        shot(page, f"studio-dataset-upload-refused-{width}-{scheme}")

        page.get_by_label("Dataset file").set_input_files(str(copy))
        page.get_by_role("button", name="Upload").click()
        success = page.locator(".messagelist .success")
        expect(success).to_contain_text("Dataset greetings-copy")
        expect(page.locator("body")).to_contain_text("says hello")
        expect(page.locator("body")).not_to_contain_text("says goodbye")
        _fits(page, width)
        shot(page, f"studio-dataset-uploaded-{width}-{scheme}")
    page.emulate_media(color_scheme="light")
    count = site.python(
        "from agents_app.models import EvalDataset;"
        "print(EvalDataset.objects.get(name='greetings-copy').cases.count())"
    )
    assert count.strip().splitlines()[-1] == "1"  # four uploads of one file: still one case
    assert not page.console_errors  # type: ignore[attr-defined]
