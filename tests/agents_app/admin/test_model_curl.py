"""A model's cURL (``GET /api/models/{name}/curl-data``) expands nothing but the key variable,
and a base URL holding shell syntax is refused wherever a model is saved (issue #36, item 4).

The command is run by a real ``bash`` whose ``curl`` is a function that writes its arguments
out: what the shell hands curl is what the reader would send, and a ``$(…)`` or backtick in
a base URL would have left a file behind."""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from agents_app.models import LanguageModel
from agents_app.services.definitions import saves as definition_saves
from runtime.core.spec import ModelDefinition
from tests.agents_app.admin.admin_pages import errors_of, fill, post, read_form
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)

pytestmark = pytest.mark.django_db

ATTACK = "https://api.openai.com/${X:-$(touch f)}/v1"
# Shell syntax a URL may hold: still data once pasted.
AWKWARD = "https://proxy.example:8443/v1;touch,f&!x=*(1)~[a]"
STUB = "curl() { printf '%s\\0' \"$@\" > args; }\n"
REFUSED = (
    "The base URL cannot contain '$' (spaces, quotes, $, backticks, backslashes, braces or "
    "control characters): write a plain URL such as https://api.example.com/v1."
)


def run_pasted(command: str, cwd: Path) -> list[str]:
    """``command`` as a reader's shell runs it, ``curl`` stubbed; the arguments curl got."""
    subprocess.run(
        ["bash", "-c", STUB + command],
        cwd=cwd,
        env={"PATH": "/usr/bin:/bin", "OPENAI_API_KEY": "sk-reader-own-key"},
        stdin=subprocess.DEVNULL,
        check=True,
        timeout=30,
    )
    return (cwd / "args").read_text().split("\0")[:-1]


def test_curl_data_is_shell_safe(as_: Any, ops: Any, tmp_path: Path) -> None:
    definition_saves.save_definitions(
        [("aw", ModelDefinition(name="aw", provider="openai", model="gpt-4o", base_url=AWKWARD))],
        strict_code_names=False,
    )
    # A row stored before base URLs were checked (or edited by hand) holds the attack.
    LanguageModel.objects.create(name="old", provider="openai", model="gpt-4o", base_url=ATTACK)
    client = as_(ops)
    for name, base in (("aw", AWKWARD), ("old", ATTACK)):
        answer = client.get(f"/api/models/{name}/curl-data")
        assert answer.status_code == 200, answer.content
        curl = answer.json()["curl"]
        subprocess.run(["bash", "-n", "-c", curl], check=True, timeout=30)
        args = run_pasted(curl, tmp_path)
        assert not (tmp_path / "f").exists(), curl
        assert args == [
            "-i",
            "-sS",
            "-X",
            "POST",
            base + "/chat/completions",
            "-H",
            "content-type: application/json",
            "-H",
            "accept: application/json",
            "-H",
            "authorization: Bearer sk-reader-own-key",  # the one expansion: the reader's key
            "--data-binary",
            "@-",
        ], curl


def test_shell_syntax_in_a_base_url_is_refused_at_save(
    as_: Any, ops: Any, client: Client, tmp_path: Path
) -> None:
    # The definition-write API: a 400 naming the field.
    body = {"name": "m", "provider": "openai", "model": "gpt-4o", "baseUrl": ATTACK}
    answer = as_(ops).post_json("/api/models", body)
    assert answer.status_code == 400, answer.content
    assert answer.json() == {"error": "Validation failed", "fieldErrors": {"baseUrl": REFUSED}}
    # The studio's model form: the error under the Base URL field.
    client.force_login(ops)
    add = reverse("admin:agents_app_languagemodel_add")
    data = fill(read_form(client, add), name="m", provider="openai", model="gpt-4o")
    page = post(client, add, fill(data, base_url=ATTACK))
    assert page.status_code == 200
    assert errors_of(page) == {"base_url": [REFUSED]}
    # import_definitions: exit status 1, the file and the field named, nothing imported.
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "m.json").write_text(json.dumps(body))
    err = io.StringIO()
    with pytest.raises(CommandError) as failed:
        call_command("import_definitions", str(tmp_path), stdout=io.StringIO(), stderr=err)
    assert failed.value.returncode == 1
    assert err.getvalue().splitlines() == [f"models/m.json: baseUrl: {REFUSED}"]
    assert not LanguageModel.objects.exists()


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("https://h.example/`id`/v1", "cannot contain '`'"),
        ("https://h.example/v1 x", "cannot contain ' '"),
        ("https://h.example/v1\n", "cannot contain U+000A"),
        ('https://h.example/"v1', "cannot contain '\"'"),
        ("ftp://h.example/v1", "must start with http:// or https://"),
        ("https:///v1", "needs a host"),
        ("https://user:pw@h.example/v1", "cannot carry a user name or password"),
    ],
)
def test_a_base_url_must_be_a_plain_url(as_: Any, ops: Any, url: str, message: str) -> None:
    body = {"name": "m", "provider": "openai", "model": "gpt-4o", "baseUrl": url}
    answer = as_(ops).post_json("/api/models", body)
    assert answer.status_code == 400, answer.content
    assert message in answer.json()["fieldErrors"]["baseUrl"]
