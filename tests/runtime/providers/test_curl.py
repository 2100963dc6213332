"""``runtime.providers.curl``: a logged request as a ``curl`` command that a shell reads back
as the same request, with the vendor's key header written as a placeholder."""

from __future__ import annotations

import json
import shlex
from typing import Any

import pytest

from runtime.providers.curl import curl_command, wire_of
from runtime.providers.inspect import CannotRender

NEUTRAL = {
    "model": "m",
    "system": "Say 'hi' and $HOME, `literally`.",
    "messages": [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "look"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,QUJD"}},
            ],
        }
    ],
    "tools": [],
}


def _args(command: str) -> list[str]:
    """What a POSIX shell passes to curl (line continuations joined)."""
    return shlex.split(command.replace(" \\\n", " "))


def _parsed(command: str) -> tuple[str, dict[str, str], Any]:
    args = _args(command)
    assert args[:3] == ["curl", "-X", "POST"]
    pairs = [args[i + 1].split(": ", 1) for i, a in enumerate(args) if a == "-H"]
    headers = {name: value for name, value in pairs}
    body = json.loads(args[args.index("--data-raw") + 1])
    return args[3], headers, body


@pytest.mark.parametrize(
    ("view", "url", "header", "placeholder"),
    [
        (
            "openai",
            "https://api.openai.com/v1/chat/completions",
            "authorization",
            "Bearer $OPENAI_API_KEY",
        ),
        ("anthropic", "https://api.anthropic.com/v1/messages", "x-api-key", "$ANTHROPIC_API_KEY"),
        (
            "openrouter",
            "https://openrouter.ai/api/v1/chat/completions",
            "authorization",
            "Bearer $OPENROUTER_API_KEY",
        ),
    ],
)
def test_the_command_reads_back_as_the_request_with_a_key_placeholder(
    view: str, url: str, header: str, placeholder: str
) -> None:
    command = curl_command("test", NEUTRAL, view)
    sent_to, headers, body = _parsed(command)
    assert sent_to == url
    # shlex does not expand variables: the placeholder is there for the shell to expand.
    assert headers[header] == placeholder
    assert f'"{header}: {placeholder}"' in command
    _, wire = wire_of("test", NEUTRAL, view)
    assert body == wire["body"]
    # Quotes, $ and backticks in the body stay data (single-quoted), never expanded.
    assert "Say 'hi' and $HOME, `literally`." in json.dumps(body)


def test_inline_image_data_is_a_size_note() -> None:
    command = curl_command("test", NEUTRAL, "google")
    assert "QUJD" not in command and "[base64: 4 chars]" in command


def test_a_vendor_request_is_repeated_as_sent() -> None:
    logged = {
        "method": "POST",
        "url": "http://127.0.0.1:9999/v1/messages",
        "headers": {"anthropic-version": "2023-06-01"},
        "body": {"model": "claude", "messages": []},
        "summary": {"model": "claude"},
    }
    sent_to, headers, body = _parsed(curl_command("anthropic", logged, "openai"))
    assert sent_to == "http://127.0.0.1:9999/v1/messages"
    assert headers == {"anthropic-version": "2023-06-01", "x-api-key": "$ANTHROPIC_API_KEY"}
    assert body == logged["body"]


def test_nothing_to_show_is_said() -> None:
    with pytest.raises(CannotRender, match="no request body"):
        curl_command("test", None)
    with pytest.raises(CannotRender, match="Unknown provider"):
        curl_command("test", NEUTRAL, "nope")
