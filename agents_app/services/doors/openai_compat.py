"""The OpenAI-compatible API (``/v1``, docs/api.md "OpenAI-compatible API"): what a request
asks for, and what a turn answered.

OpenAI's clients speak Chat Completions and Responses; an agent answers in a thread. This
module translates between the two without running anything: ``chat_ask`` and
``responses_ask`` read a request body into an ``Ask``, refusing what the agent would not
honour (tools the client declares, sampling settings: the agent's own definitions decide
those), ``history_write`` stores the earlier turns of a new conversation, ``turn_state``
reads what the session has answered so far and ``turn_usage`` what it consumed. Turns are
started by the orchestration (``orchestration/openai_turns.py``); the edge
(``api/openai_v1.py``) waits for them and speaks the wire.

Every refusal is an ``OpenAIError``: OpenAI's error body (``message``, ``type``, ``param``,
``code``) and its HTTP status, so the client libraries raise their usual exceptions.
"""

from __future__ import annotations

import base64
import binascii
import mimetypes
import re
import uuid
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Literal

from django.db import transaction
from django.db.models import Count, Sum

from agents_app import selectors, wire
from agents_app.base.errors import DomainError, Invalid, RateLimited
from agents_app.models import Log, Message, QueuedMessage, Thread, ThreadSession
from agents_app.models.timestamps import now_us
from agents_app.services.env.redaction import thread_redactor
from agents_app.services.threads.files import attachment_write, clean_mime_type
from agents_app.services.threads.messages import CONTENT_MAX, NewAttachment

# The header a client sends to continue a thread, and finds the thread's id in on every
# answer that has one.
THREAD_HEADER = "X-Thread-Id"
MAX_MESSAGES = 1000  # a new conversation's history, turns
MAX_PARTS = 100  # content parts of one message

ErrorType = Literal["invalid_request_error", "requests", "server_error"]


class OpenAIError(Exception):
    """A refusal in OpenAI's shape. ``retry``: the ``x-should-retry`` header OpenAI's clients
    obey (``False`` where a retry would post the message again, or cannot help)."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        type: ErrorType = "invalid_request_error",  # noqa: A002 - OpenAI's field name
        param: str | None = None,
        code: str | None = None,
        retry_after: int | None = None,
        retry: bool | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type
        self.param = param
        self.code = code
        self.retry_after = retry_after
        self.retry = retry

    def body(self) -> dict[str, Any]:
        return {
            "error": {
                "message": self.message,
                "type": self.type,
                "param": self.param,
                "code": self.code,
            }
        }


# Our domain errors' statuses, as OpenAI codes them (the sentence stays ours).
_CODES = {
    401: "invalid_api_key",
    403: "permission_denied",
    404: "not_found",
    409: "conflict",
    413: "request_too_large",
    422: "unprocessable_entity",
    423: "thread_terminated",
}


def from_domain(exc: DomainError, *, param: str | None = None) -> OpenAIError:
    """A service's refusal (``agents_app.base.errors``) as OpenAI's error, same status."""
    if isinstance(exc, RateLimited):
        return OpenAIError(
            429,
            exc.message,
            type="requests",
            code="rate_limit_exceeded",
            retry_after=exc.retry_after,
        )
    return OpenAIError(exc.status, exc.message, param=param, code=_CODES.get(exc.status))


def invalid(message: str, param: str | None = None, code: str | None = None) -> OpenAIError:
    return OpenAIError(400, message, param=param, code=code)


# --- what a request asks ------------------------------------------------------------------


@dataclass(frozen=True)
class Said:
    """One message of the conversation: who said it, the text, the files."""

    role: Literal["user", "assistant", "system"]
    content: str
    attachments: list[NewAttachment] = field(default_factory=list)


@dataclass(frozen=True)
class ResponseRef:
    """What a response id names: the thread, and the user message it answered."""

    thread_id: str
    message_id: str


@dataclass(frozen=True)
class Ask:
    """One turn a client asks for: ``message`` posted to ``model``'s thread, a new one with
    ``history`` first, or ``thread_id`` (the header) or ``previous`` (a response id)."""

    api: Literal["chat", "responses"]
    model: str
    message: Said
    history: list[Said]
    thread_id: str | None
    previous: ResponseRef | None
    stream: bool
    include_usage: bool


# Settings the agent's own prompt and model definitions decide: taken from a client, they
# would be ignored, so they are refused with a sentence that says so.
_TUNING = frozenset(
    {
        "temperature",
        "top_p",
        "top_k",
        "max_tokens",
        "max_completion_tokens",
        "max_output_tokens",
        "max_tool_calls",
        "presence_penalty",
        "frequency_penalty",
        "seed",
        "stop",
        "logit_bias",
        "logprobs",
        "top_logprobs",
        "response_format",
        "reasoning",
        "reasoning_effort",
        "text",
        "modalities",
        "audio",
        "prediction",
        "service_tier",
        "verbosity",
        "truncation",
        "web_search_options",
        "prompt_cache_key",
        "safety_identifier",
    }
)
_TOOLS = frozenset({"tools", "tool_choice", "parallel_tool_calls", "functions", "function_call"})
TOOLS_REFUSED = (
    "{param}: this API runs each agent with its own tools, on the server, and its answer "
    "includes their outcome; it does not return tool calls for a client to run. Send the "
    "request without {param}."
)


def _absent(value: Any) -> bool:
    # What a client sends for "not set" (null, an empty list or object, false): accepted
    # as absent, as POST /api/threads accepts an empty field it does not use.
    return value is None or value is False or value == [] or value == {} or value == ""


def _refuse_unknown(body: dict[str, Any], accepted: frozenset[str]) -> None:
    for key, value in body.items():
        if key in accepted or _absent(value):
            continue
        if key in _TOOLS:
            raise invalid(TOOLS_REFUSED.format(param=key), key, "unsupported_parameter")
        if key in _TUNING:
            raise invalid(
                f"{key}: the agent answers with the settings of its own prompt and model "
                f"definitions; this API does not take {key}. Send the request without it.",
                key,
                "unsupported_parameter",
            )
        raise invalid(
            f'Unsupported parameter: {key!r} (docs/api.md, "OpenAI-compatible API", lists '
            "what this API takes).",
            key,
            "unsupported_parameter",
        )


def _text(value: Any, param: str, *, limit: int = CONTENT_MAX) -> str:
    if not isinstance(value, str):
        raise invalid(f"{param}: expected a string", param)
    if len(value) > limit:
        raise invalid(f"{param}: at most {limit} characters", param)
    return value


def _model(body: dict[str, Any]) -> str:
    model = body.get("model")
    if not isinstance(model, str) or not model.strip():
        raise invalid("model: required, the name of an agent (GET /v1/models lists them)", "model")
    return model.strip()


def _stream(body: dict[str, Any]) -> bool:
    stream = body.get("stream")
    if stream is None:
        return False
    if not isinstance(stream, bool):
        raise invalid("stream: expected true or false", "stream")
    return stream


def _object(value: Any, param: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise invalid(f"{param}: expected an object", param)
    return value


def thread_id_of(header: str | None) -> str | None:
    """The thread a client continues (``X-Thread-Id``), checked for shape only."""
    if header is None or not header.strip():
        return None
    try:
        return str(uuid.UUID(header.strip()))
    except ValueError:
        raise invalid(
            f"{THREAD_HEADER}: not a thread id (send back the {THREAD_HEADER} of an earlier answer)",
            THREAD_HEADER,
        ) from None


# --- files in the input -----------------------------------------------------------------------

_DATA_URL = re.compile(r"^data:(?P<mime>[^;,]*)(?P<params>(?:;[^;,]*)*),", re.IGNORECASE)


class _Files:
    """The attachments of one request, numbered for their default names."""

    def __init__(self) -> None:
        self.count = 0

    def image(self, url: Any, param: str) -> NewAttachment:
        if not isinstance(url, str):
            raise invalid(f"{param}: expected a data: URL", param)
        mime, data = _data_url(url, param)
        if mime is None:
            raise invalid(f"{param}: the data: URL names no image type", param)
        if not mime.startswith("image/"):
            raise invalid(f"{param}: not an image ({mime})", param)
        return self._new(f"image-{self.count + 1}", mime, data, param)

    def file(self, part: dict[str, Any], param: str) -> NewAttachment:
        if not _absent(part.get("file_id")) or not _absent(part.get("file_url")):
            key = "file_id" if not _absent(part.get("file_id")) else "file_url"
            raise invalid(
                f"{param}.{key}: this server has no Files API and fetches no URLs; send the "
                "file's bytes as file_data (base64, or a data: URL)",
                f"{param}.{key}",
            )
        raw = part.get("file_data")
        if not isinstance(raw, str) or not raw:
            raise invalid(
                f"{param}.file_data: required (base64, or a data: URL)", f"{param}.file_data"
            )
        filename = part.get("filename")
        if filename is not None and not isinstance(filename, str):
            raise invalid(f"{param}.filename: expected a string", f"{param}.filename")
        name = (filename or "").strip()[:200]
        if raw.startswith("data:"):
            mime, data = _data_url(raw, f"{param}.file_data")
        else:
            mime, data = None, _base64(raw, f"{param}.file_data")
        mime = mime or (mimetypes.guess_type(name)[0] if name else None)
        mime = mime or "application/octet-stream"
        return self._new(name or f"file-{self.count + 1}", mime, data, param, named=bool(name))

    def _new(
        self, stem: str, mime: str, data: str, param: str, *, named: bool = False
    ) -> NewAttachment:
        try:
            mime = clean_mime_type(mime)
        except Invalid as exc:
            raise invalid(f"{param}: {exc.message}", param) from None
        self.count += 1
        name = stem if named else stem + (mimetypes.guess_extension(mime) or "")
        return NewAttachment(name=name, mime_type=mime, data=data)


def data_url(url: str, param: str) -> tuple[str | None, str]:
    """(the media type, the base64 data) of a ``data:…;base64,…`` URL (``OpenAIError``
    naming ``param`` otherwise): the A2A door reads a file part's data: URI with it."""
    return _data_url(url, param)


def _data_url(url: str, param: str) -> tuple[str | None, str]:
    """(the media type, the base64 data) of a ``data:…;base64,…`` URL."""
    if url.startswith(("http://", "https://")):
        raise invalid(
            f"{param}: this server fetches no URLs; send the bytes as a data: URL "
            "(data:image/png;base64,…)",
            param,
        )
    match = _DATA_URL.match(url)
    if match is None or ";base64" not in match.group("params").lower():
        raise invalid(f"{param}: expected a base64 data: URL (data:<type>;base64,<data>)", param)
    mime = match.group("mime").strip().lower() or None
    return mime, _base64(url[match.end() :], param)


def _base64(data: str, param: str) -> str:
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise invalid(f"{param}: not valid base64", param) from None
    return data


# --- Chat Completions -------------------------------------------------------------------------

_CHAT_FIELDS = frozenset({"model", "messages", "stream", "stream_options", "n"})
_CHAT_ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant"}


def chat_ask(body: Any, *, thread_header: str | None) -> Ask:
    """A ``POST /v1/chat/completions`` body: the last message is the user's new message;
    the earlier ones are a new thread's history (a thread continued with ``X-Thread-Id``
    has its own history, so they are not stored again)."""
    body = _object(body, "body")
    _refuse_unknown(body, _CHAT_FIELDS)
    model = _model(body)
    n = body.get("n")
    if n is not None and n != 1:
        raise invalid("n: an agent gives one answer per turn (n must be 1)", "n")
    stream = _stream(body)
    include_usage = _stream_options(body.get("stream_options"), stream)
    raw = body.get("messages")
    if not isinstance(raw, list) or not raw:
        raise invalid("messages: required, a non-empty list", "messages")
    if len(raw) > MAX_MESSAGES:
        raise invalid(f"messages: at most {MAX_MESSAGES}", "messages")
    files = _Files()
    said = [_chat_message(m, f"messages.{i}", files) for i, m in enumerate(raw)]
    last = said[-1]
    if last.role != "user":
        raise invalid(
            "messages: the last message must be the user's (the agent answers it)",
            f"messages.{len(said) - 1}.role",
        )
    thread_id = thread_id_of(thread_header)
    return Ask(
        api="chat",
        model=model,
        message=last,
        history=[] if thread_id else said[:-1],
        thread_id=thread_id,
        previous=None,
        stream=stream,
        include_usage=include_usage,
    )


def _stream_options(value: Any, stream: bool) -> bool:
    if value is None:
        return False
    options = _object(value, "stream_options")
    if not stream:
        raise invalid("stream_options: only with stream: true", "stream_options")
    for key, item in options.items():
        if key != "include_usage" and not _absent(item):
            raise invalid(f"Unsupported parameter: 'stream_options.{key}'", f"stream_options.{key}")
    usage = options.get("include_usage")
    if usage is not None and not isinstance(usage, bool):
        raise invalid(
            "stream_options.include_usage: expected true or false", "stream_options.include_usage"
        )
    return bool(usage)


def _chat_message(raw: Any, param: str, files: _Files) -> Said:
    message = _object(raw, param)
    role = message.get("role")
    if role in ("tool", "function"):
        raise invalid(
            f"{param}: {role} messages carry results of client-run tools; this API runs the "
            "agent's tools on the server and takes none from the client",
            f"{param}.role",
            "unsupported_parameter",
        )
    if not isinstance(role, str) or role not in _CHAT_ROLES:
        raise invalid(f"{param}.role: one of system, developer, user, assistant", f"{param}.role")
    for key, value in message.items():
        if key in ("role", "content") or _absent(value):
            continue
        if key in ("tool_calls", "function_call"):
            raise invalid(TOOLS_REFUSED.format(param=f"{param}.{key}"), f"{param}.{key}")
        raise invalid(f"Unsupported parameter: '{param}.{key}'", f"{param}.{key}")
    content, attachments = _chat_content(message.get("content"), f"{param}.content", files)
    if not content.strip() and not attachments and role == "user":
        raise invalid(f"{param}.content: text or a file is required", f"{param}.content")
    return Said(_CHAT_ROLES[role], content, attachments)  # type: ignore[arg-type]


def _chat_content(value: Any, param: str, files: _Files) -> tuple[str, list[NewAttachment]]:
    if value is None:
        return "", []
    if isinstance(value, str):
        return _text(value, param), []
    texts: list[str] = []
    attachments: list[NewAttachment] = []
    for where, part in _parts(value, param):
        kind = part.get("type")
        if kind == "text":
            texts.append(_text(part.get("text"), f"{where}.text"))
        elif kind == "image_url":
            image = part.get("image_url")
            url = image.get("url") if isinstance(image, dict) else image
            attachments.append(files.image(url, f"{where}.image_url.url"))
        elif kind == "file":
            attachments.append(
                files.file(_object(part.get("file"), f"{where}.file"), f"{where}.file")
            )
        else:
            raise invalid(
                f"{where}.type: {kind!r} is not taken here (text, image_url and file are)",
                f"{where}.type",
            )
    return _joined(texts, param), attachments


def _parts(value: Any, param: str) -> list[tuple[str, dict[str, Any]]]:
    """A content list's parts with their places (``messages.0.content.1``), checked to be a
    list of at most ``MAX_PARTS`` objects: the prelude of both APIs' content parsers."""
    if not isinstance(value, list):
        raise invalid(f"{param}: expected a string or a list of content parts", param)
    if len(value) > MAX_PARTS:
        raise invalid(f"{param}: at most {MAX_PARTS} parts", param)
    return [(f"{param}.{i}", _object(raw, f"{param}.{i}")) for i, raw in enumerate(value)]


def _joined(texts: list[str], param: str) -> str:
    text = "\n".join(t for t in texts if t)
    if len(text) > CONTENT_MAX:
        raise invalid(f"{param}: at most {CONTENT_MAX} characters in all", param)
    return text


# --- Responses --------------------------------------------------------------------------------

_RESPONSES_FIELDS = frozenset(
    {"model", "input", "instructions", "previous_response_id", "stream", "store"}
)
_INPUT_TEXT = ("input_text", "output_text", "text")


def responses_ask(body: Any, *, thread_header: str | None) -> Ask:
    """A ``POST /v1/responses`` body: ``input`` is the next user message (a string, or a list
    of messages whose last is the user's; with ``previous_response_id`` or ``X-Thread-Id``,
    that message alone), ``instructions`` a new thread's first system message."""
    body = _object(body, "body")
    _refuse_unknown(body, _RESPONSES_FIELDS)
    model = _model(body)
    stream = _stream(body)
    if body.get("store") is False:
        raise invalid(
            "store: false is not possible here: every conversation is kept as a thread, the "
            "way previous_response_id continues it",
            "store",
        )
    previous = _previous(body.get("previous_response_id"))
    thread_id = thread_id_of(thread_header)
    if previous is not None and thread_id is not None and previous.thread_id != thread_id:
        raise invalid(
            f"previous_response_id belongs to another thread than {THREAD_HEADER}",
            "previous_response_id",
        )
    continued = previous is not None or thread_id is not None
    files = _Files()
    said = _input(body.get("input"), files)
    instructions = body.get("instructions")
    history = said[:-1]
    if not _absent(instructions):
        if continued:
            raise invalid(
                "instructions: only when a conversation starts (they become its thread's "
                "first system message, which later turns keep)",
                "instructions",
            )
        history = [Said("system", _text(instructions, "instructions")), *history]
    if continued and len(said) > 1:
        raise invalid(
            "input: with previous_response_id (or the thread header), input is the next user "
            "message only; the thread holds the conversation before it",
            "input",
        )
    return Ask(
        api="responses",
        model=model,
        message=said[-1],
        history=history,
        thread_id=thread_id or (previous.thread_id if previous else None),
        previous=previous,
        stream=stream,
        include_usage=True,
    )


def _previous(value: Any) -> ResponseRef | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise invalid("previous_response_id: expected a string", "previous_response_id")
    ref = response_ref(value)
    if ref is None:
        raise OpenAIError(
            404,
            f"Previous response with id '{value[:100]}' not found.",
            param="previous_response_id",
            code="previous_response_not_found",
        )
    return ref


def _input(value: Any, files: _Files) -> list[Said]:
    if isinstance(value, str):
        if not value.strip():
            raise invalid("input: required, the user's message", "input")
        return [Said("user", _text(value, "input"))]
    if not isinstance(value, list) or not value:
        raise invalid("input: required, a string or a non-empty list of messages", "input")
    if len(value) > MAX_MESSAGES:
        raise invalid(f"input: at most {MAX_MESSAGES} items", "input")
    said = [_input_item(item, f"input.{i}", files) for i, item in enumerate(value)]
    if said[-1].role != "user":
        raise invalid(
            "input: the last item must be the user's message (the agent answers it)",
            f"input.{len(said) - 1}.role",
        )
    return said


def _input_item(raw: Any, param: str, files: _Files) -> Said:
    item = _object(raw, param)
    kind = item.get("type", "message")
    if kind != "message":
        if kind in ("function_call", "function_call_output", "custom_tool_call_output"):
            raise invalid(TOOLS_REFUSED.format(param=f"{param} ({kind})"), f"{param}.type")
        raise invalid(f"{param}.type: {kind!r} is not taken here (messages are)", f"{param}.type")
    role = item.get("role")
    if not isinstance(role, str) or role not in _CHAT_ROLES:
        raise invalid(f"{param}.role: one of system, developer, user, assistant", f"{param}.role")
    for key, value in item.items():
        if key not in ("type", "role", "content", "id", "status") and not _absent(value):
            raise invalid(f"Unsupported parameter: '{param}.{key}'", f"{param}.{key}")
    content, attachments = _input_content(item.get("content"), f"{param}.content", files)
    if not content.strip() and not attachments and role == "user":
        raise invalid(f"{param}.content: text or a file is required", f"{param}.content")
    return Said(_CHAT_ROLES[role], content, attachments)  # type: ignore[arg-type]


def _input_content(value: Any, param: str, files: _Files) -> tuple[str, list[NewAttachment]]:
    if isinstance(value, str):
        return _text(value, param), []
    texts: list[str] = []
    attachments: list[NewAttachment] = []
    for where, part in _parts(value, param):
        kind = part.get("type")
        if kind in _INPUT_TEXT:
            texts.append(_text(part.get("text"), f"{where}.text"))
        elif kind == "input_image":
            if not _absent(part.get("file_id")):
                raise invalid(
                    f"{where}.file_id: this server has no Files API; send image_url as a data: URL",
                    f"{where}.file_id",
                )
            attachments.append(files.image(part.get("image_url"), f"{where}.image_url"))
        elif kind == "input_file":
            attachments.append(files.file(part, where))
        else:
            raise invalid(
                f"{where}.type: {kind!r} is not taken here (input_text, input_image and "
                "input_file are)",
                f"{where}.type",
            )
    return _joined(texts, param), attachments


# --- ids --------------------------------------------------------------------------------------

_RESPONSE_ID = re.compile(r"^resp_([0-9a-f]{32})([0-9a-f]{32})$")


def response_id(thread_id: str, message_id: str) -> str:
    """A response's id: its thread and the user message it answers, so that
    ``previous_response_id`` finds the thread again with no table of its own."""
    return f"resp_{uuid.UUID(thread_id).hex}{uuid.UUID(message_id).hex}"


def completion_id(thread_id: str, message_id: str) -> str:
    return f"chatcmpl-{uuid.UUID(thread_id).hex}{uuid.UUID(message_id).hex}"


def response_ref(value: str) -> ResponseRef | None:
    match = _RESPONSE_ID.match(value)
    if match is None:
        return None
    return ResponseRef(str(uuid.UUID(match.group(1))), str(uuid.UUID(match.group(2))))


def previous_check(thread: Thread, ref: ResponseRef) -> None:
    """``previous_response_id`` names a turn of ``thread``, its latest: continuing from an
    earlier response would branch the conversation, which this API does not do (fork the
    thread in the studio, or ``POST /api/threads/{id}/fork``, and continue that one)."""
    question = (
        Message.objects.filter(thread=thread, pk=ref.message_id, depth=0, role="user")
        .values_list("created_at", flat=True)
        .first()
    )
    if question is None:
        if QueuedMessage.objects.filter(thread=thread, pk=ref.message_id).exists():
            return  # still waiting for its session: the latest turn
        raise OpenAIError(
            404,
            f"Previous response with id '{response_id(ref.thread_id, ref.message_id)}' not found.",
            param="previous_response_id",
            code="previous_response_not_found",
        )
    later = Message.objects.filter(
        thread=thread, depth=0, role="user", abandoned=False, created_at__gt=question
    )
    if later.exists():
        raise invalid(
            "previous_response_id: not the latest response of its conversation; this API "
            "continues a conversation from its latest response only (fork the thread to "
            "branch it)",
            "previous_response_id",
        )


# --- a new conversation's history -------------------------------------------------------------


@transaction.atomic
def history_write(thread: Thread, history: list[Said]) -> None:
    """Store the turns a client sent before its new message, as the thread's first messages
    (redacted as every stored message is; files as a post's attachments), so the agent reads
    them as its history. Nothing runs: the post that follows starts the session."""
    if not history:
        return
    redactor = thread_redactor(str(thread.pk))
    start = now_us()
    for index, said in enumerate(history):
        refs = []
        for attachment in said.attachments:
            name = redactor.text(attachment.name)
            row = attachment_write(
                thread, name, base64.b64decode(attachment.data), attachment.mime_type
            )
            ref = wire.attachment_ref(row)
            ref["name"] = name
            refs.append(ref)
        Message.objects.create(
            thread=thread,
            role=said.role,
            content=redactor.text(said.content),
            attachments=refs or None,
            status=Message.Status.COMPLETED,
            created_at=start + index,
            metadata={"source": "openai_history"},
        )


# --- what a turn answered ---------------------------------------------------------------------


@dataclass(frozen=True)
class Reply:
    """One message the agent wrote in the turn (top level): its text so far, and whether
    it is final (completed, or failed: no more text comes)."""

    id: str
    text: str
    final: bool
    completed: bool


@dataclass(frozen=True)
class Failure:
    status: int
    code: str
    message: str


@dataclass(frozen=True)
class TurnState:
    done: bool
    replies: list[Reply]
    failure: Failure | None = None

    def answer(self) -> str:
        """The turn's text: its completed replies, in order (a step's words before it called
        tools, then the final answer), apart by a blank line."""
        return "\n\n".join(r.text for r in self.replies if r.completed and r.text)


_ACTIVE = (ThreadSession.Status.QUEUED, ThreadSession.Status.RUNNING)


def turn_state(thread_id: str, question_id: str) -> TurnState:
    """Where the session answering ``question_id`` is (stored rows only, redacted)."""
    question = (
        Message.objects.filter(thread_id=thread_id, pk=question_id)
        .values_list("created_at", flat=True)
        .first()
    )
    if question is None:
        if QueuedMessage.objects.filter(thread_id=thread_id, pk=question_id).exists():
            return TurnState(False, [])  # not yet taken by its session
        return TurnState(
            True,
            [],
            Failure(
                409, "message_removed", "The message was removed before the agent answered it."
            ),
        )
    # Whether a session still runs is read before the replies: one that ended before this
    # read stored its reply first, so the rows read next hold it (the other way round, a
    # session ending between the two reads was over with the rows from before its reply).
    active = ThreadSession.objects.filter(thread_id=thread_id, status__in=_ACTIVE).exists()
    rows = (
        Message.objects.filter(
            thread_id=thread_id,
            depth=0,
            role=Message.Role.ASSISTANT,
            abandoned=False,
            silent=False,
            created_at__gt=question,
        )
        .order_by("created_at")
        .values_list("id", "content", "status")
    )
    replies = [
        Reply(
            str(pk),
            content or "",
            status != Message.Status.PENDING,
            status == Message.Status.COMPLETED,
        )
        for pk, content, status in rows
    ]
    if active:
        return TurnState(False, replies)
    last = (
        ThreadSession.objects.filter(thread_id=thread_id)
        .order_by("-created_at")
        .values_list("status", "error")
        .first()
    )
    return TurnState(True, replies, _failure(thread_id, last))


def _failure(thread_id: str, last: tuple[str, str] | None) -> Failure | None:
    if last is None:
        return None
    status, error = last
    if status == ThreadSession.Status.FAILED:
        return Failure(
            502, "agent_failed", f"The agent's session failed: {error or 'no reason recorded'}"
        )
    if status == ThreadSession.Status.STOPPED:
        return Failure(
            409, "session_stopped", "The session was stopped before the agent finished answering."
        )
    if status == ThreadSession.Status.PARKED:
        return Failure(
            409,
            "tool_call_waiting",
            "The agent is waiting for a tool call to be approved (or run by a client) in "
            f"thread {thread_id}; this API cannot decide it. Decide it in the studio, then "
            "continue the thread.",
        )
    return None


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    reasoning_tokens: int
    cost: float  # USD

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


def turn_usage(thread_id: str, question_id: str) -> Usage:
    """What the turn consumed: every LLM request since the question, in the thread and in
    the threads of agents it called (the cost API's subtree), from the logs."""
    since = (
        Message.objects.filter(thread_id=thread_id, pk=question_id)
        .values_list("created_at", flat=True)
        .first()
    )
    if since is None:
        return Usage(0, 0, 0, 0, 0.0)
    subtree = selectors.thread_subtree(Thread(pk=thread_id))[: selectors.MAX_SUBTREE + 1]
    sums = Log.objects.filter(
        thread_id__in=subtree, kind=Log.Kind.LLM, created_at__gte=since
    ).aggregate(
        prompt=Sum("input_tokens"),
        completion=Sum("output_tokens"),
        cached=Sum("cached_tokens"),
        reasoning=Sum("reasoning_tokens"),
        cost=Sum("cost_total"),
        requests=Count("id"),
    )
    cost: Decimal = sums["cost"] or Decimal(0)
    return Usage(
        int(sums["prompt"] or 0),
        int(sums["completion"] or 0),
        int(sums["cached"] or 0),
        int(sums["reasoning"] or 0),
        float(cost),
    )
