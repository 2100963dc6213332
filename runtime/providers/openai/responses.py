"""OpenAI Responses API (``POST {base}/responses``), for models whose definition says
``api: "responses"`` (docs/providers.md#openai-responses-api).

What it adds over Chat Completions: reasoning summaries as reasoning text, encrypted
reasoning items carried between steps (``store: false``; the runtime keeps the history),
image parts inside tool results, and OpenAI's provider tools (web search, code
interpreter, file search, image generation). The request is built in
``responses_request``, answers are parsed in ``responses_stream``.
"""

from __future__ import annotations

from typing import Any

from runtime.providers.adapter import PreparedRequest, StreamParser
from runtime.providers.base import ProviderRequest, StreamEvent
from runtime.providers.openai.chat_completions import OpenAIProvider
from runtime.providers.openai.responses_request import responses_body
from runtime.providers.openai.responses_stream import ResponsesStreamParser, parse_response


class OpenAIResponsesProvider(OpenAIProvider):
    """OpenAI over the Responses API (same name, key, base URL and errors as Chat)."""

    def build_request(
        self, request: ProviderRequest, *, stream: bool | None = None
    ) -> PreparedRequest:
        streaming = self.streaming if stream is None else stream
        headers = self.base_headers()
        if streaming:
            headers["accept"] = "text/event-stream"
        body = responses_body(request, stream=streaming)
        return PreparedRequest("POST", f"{self.base_url}/responses", headers, body, streaming)

    def stream_parser(self, request: ProviderRequest) -> StreamParser:
        return ResponsesStreamParser(request.model)

    def parse_body(self, payload: Any, request: ProviderRequest) -> list[StreamEvent]:
        return parse_response(payload, request.model)
