"""Loading the recorded provider fixtures (``../shared/fixtures/providers``).

Cassettes are vcrpy YAML slices: pydantic-ai ones store JSON bodies as
``parsed_body`` (keys re-sorted), simonw ones keep the raw JSON string; SSE
bodies are byte-exact in ``body.string``. ``PROVIDER_FIXTURES`` overrides the
directory.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .replay import Reply

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = Path(
    os.environ.get("PROVIDER_FIXTURES", ROOT.parent / "shared" / "fixtures" / "providers")
)

# Response headers worth replaying (the rest is CDN noise).
KEPT_HEADERS = ("content-type", "retry-after", "retry-after-ms", "x-should-retry", "request-id")


@dataclass
class Interaction:
    """One recorded request/response pair."""

    uri: str
    request_body: Any
    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def is_stream(self) -> bool:
        return "event-stream" in self.headers.get("content-type", "") or self.body.startswith(
            (b"data:", b"event:", b":")
        )

    def reply(self, chunk_size: int | None = 97) -> Reply:
        """The recorded response, streamed in odd-sized chunks when it is an event stream."""
        headers = {k: v for k, v in self.headers.items() if k in KEPT_HEADERS}
        if self.is_stream:
            reply = Reply.sse(self.body, chunk_size)
            reply.status = self.status
            reply.headers = {"content-type": "text/event-stream", **headers}
            return reply
        headers.setdefault("content-type", "application/json")
        return Reply(self.status, headers, self.body)

    def response_json(self) -> Any:
        return json.loads(self.body)


def path(name: str) -> Path:
    found = FIXTURES / name
    if not found.exists():
        raise FileNotFoundError(f"provider fixture missing: {found} (set PROVIDER_FIXTURES)")
    return found


def cassette(name: str) -> list[Interaction]:
    data = yaml.safe_load(path(name).read_text())
    return [_interaction(item) for item in data["interactions"]]


def raw(name: str) -> bytes:
    return path(name).read_bytes()


def _interaction(item: dict[str, Any]) -> Interaction:
    request, response = item["request"], item["response"]
    request_body = request.get("parsed_body")
    # A GET (model listings) records an empty body.
    if request_body is None and isinstance(request.get("body"), str) and request["body"]:
        request_body = json.loads(request["body"])
    headers = {k.lower(): v[0] for k, v in (response.get("headers") or {}).items() if v}
    if "parsed_body" in response:
        body = json.dumps(response["parsed_body"]).encode()
    else:
        body = (response.get("body") or {}).get("string", "").encode()
    return Interaction(request["uri"], request_body, response["status"]["code"], headers, body)


def txtar_section(name: str, section: str) -> str:
    """One ``-- section --`` of a txtar file."""
    text = path(name).read_text()
    marker = f"-- {section} --\n"
    start = text.index(marker) + len(marker)
    end = text.find("\n-- ", start)
    return text[start : end if end >= 0 else None]


def txtar_reply(name: str, section: str) -> Reply:
    """A raw ``HTTP/x status`` + headers + body section as a ``Reply``."""
    head, _, body = txtar_section(name, section).strip("\n").partition("\n\n")
    status_line, *header_lines = head.splitlines()
    headers = {}
    for line in header_lines:
        key, _, value = line.partition(":")
        if key.lower() not in ("content-length",):
            headers[key.strip().lower()] = value.strip()
    return Reply(int(status_line.split()[1]), headers, body.strip().encode())
