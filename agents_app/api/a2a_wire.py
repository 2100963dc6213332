"""The JSON of the A2A door (``/a2a``): requests read into our shapes, tasks written in the
protocol's, for A2A 1.0 (``SendMessage`` …, proto-JSON: ``TASK_STATE_COMPLETED``,
``ROLE_AGENT``, results wrapped as ``{"task": …}``) and for 0.3 clients (``message/send`` …:
``"kind"`` on every object, lower-case states), from one set of builders: ``v03`` turns a
1.0 result into its 0.3 form.

The shapes follow the a2a-sdk's (``a2a/types/a2a_pb2.pyi``, ``a2a/compat/v0_3/types.py``);
the SDK itself is a dev dependency, used by the tests' client only.
"""

from __future__ import annotations

import base64
import binascii
import json
import mimetypes
from datetime import datetime
from typing import Any
from urllib.parse import quote

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agents_app.base.errors import Invalid
from agents_app.models import Agent
from agents_app.services.doors.a2a_tasks import (
    ANSWER_ARTIFACT,
    A2AError,
    FileArtifact,
    Said,
    TaskView,
    invalid_params,
)
from agents_app.services.doors.openai_compat import OpenAIError, data_url
from agents_app.services.threads.files import clean_mime_type
from agents_app.services.threads.messages import CONTENT_MAX, NewAttachment

PROTOCOL_VERSION = "1.0"
MAX_PARTS = 100
TEXT_MODES = frozenset({"text/plain", "text", "*/*", "text/*"})


def encode(value: Any) -> bytes:
    return orjson.dumps(value)


def sse(value: Any, *, error: bool = False) -> bytes:
    head = b"event: error\n" if error else b""
    return head + b"data: " + orjson.dumps(value) + b"\n\n"


# --- JSON-RPC ----------------------------------------------------------------------------------


def result(request_id: Any, value: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": value}


def error(request_id: Any, exc: A2AError) -> dict[str, Any]:
    body: dict[str, Any] = {"code": exc.code, "message": exc.message}
    if exc.data:
        body["data"] = exc.data
    return {"jsonrpc": "2.0", "id": request_id, "error": body}


# --- what a client sends -----------------------------------------------------------------------


class _Lenient(BaseModel):
    # Fields a later revision adds are ignored, as the protocol asks of servers; every
    # field this door would ignore while a client relies on it is refused below instead.
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class FileContent(_Lenient):
    """0.3's ``file`` of a file part."""

    bytes_: str | None = Field(None, alias="bytes")
    uri: str | None = None
    name: str | None = None
    mime_type: str | None = Field(None, alias="mimeType")


class PartIn(_Lenient):
    kind: str | None = None  # 0.3: text, file, data
    text: str | None = None
    raw: str | None = None  # 1.0: base64
    url: str | None = None
    data: Any = None
    filename: str | None = None
    media_type: str | None = Field(None, alias="mediaType")
    file: FileContent | None = None  # 0.3


class MessageIn(_Lenient):
    message_id: str = Field("", alias="messageId")
    context_id: str | None = Field(None, alias="contextId")
    task_id: str | None = Field(None, alias="taskId")
    role: str = "ROLE_USER"
    parts: list[PartIn] = Field(default_factory=list)
    reference_task_ids: list[str] = Field(default_factory=list, alias="referenceTaskIds")
    extensions: list[str] = Field(default_factory=list)


class SendConfig(_Lenient):
    accepted_output_modes: list[str] = Field(default_factory=list, alias="acceptedOutputModes")
    history_length: int | None = Field(None, alias="historyLength")
    return_immediately: bool = Field(False, alias="returnImmediately")
    blocking: bool | None = None  # 0.3 (true unless false)
    push: Any = Field(None, alias="taskPushNotificationConfig")
    push_v03: Any = Field(None, alias="pushNotificationConfig")


class SendParams(_Lenient):
    message: MessageIn
    configuration: SendConfig = Field(default_factory=SendConfig)


class ListParams(_Lenient):
    context_id: str | None = Field(None, alias="contextId")
    status: str | None = None
    page_size: int | None = Field(None, alias="pageSize")
    page_token: str | None = Field(None, alias="pageToken")
    history_length: int | None = Field(None, alias="historyLength")
    status_timestamp_after: datetime | None = Field(None, alias="statusTimestampAfter")
    include_artifacts: bool = Field(False, alias="includeArtifacts")


def state_of(name: str) -> Any:
    """A ``TaskState`` name (1.0's ``TASK_STATE_…`` or 0.3's) as our state."""
    for ours, theirs in _STATES.items():
        if name in (ours, theirs):
            return ours
    raise invalid_params(f"status: not a task state ({name[:50]})")


def tasks_page(
    views: list[TaskView],
    base_url: str,
    *,
    history_length: int | None,
    include_artifacts: bool,
    size: int,
    total: int,
    next_offset: int | None,
) -> dict[str, Any]:
    listed = []
    for view in views:
        body = task(view, base_url, history_length)
        if not include_artifacts:
            body.pop("artifacts", None)
        listed.append(body)
    return {
        "tasks": listed,
        "nextPageToken": str(next_offset) if next_offset is not None else "",
        "pageSize": size,
        "totalSize": total,
    }


class TaskParams(_Lenient):
    id: str
    history_length: int | None = Field(None, alias="historyLength")


def parsed(model: type[BaseModel], params: Any) -> Any:
    if not isinstance(params, dict):
        raise invalid_params("params: expected an object")
    try:
        return model.model_validate(params)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "params"
        raise invalid_params(f"params.{where}: {first['msg']}") from None


class Sent:
    """A message read: its text, its files, its data parts."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.files: list[NewAttachment] = []
        self.data: list[Any] = []

    @property
    def text(self) -> str:
        return "\n".join(t for t in self.texts if t)


def sent_of(params: SendParams) -> Sent:
    """The message's parts, checked: text, files as bytes, data (JSON)."""
    message = params.message
    config = params.configuration
    if config.push is not None or config.push_v03 is not None:
        raise A2AError(-32003, "Push notifications are not supported: use message/stream or poll.")
    modes = config.accepted_output_modes
    if modes and not TEXT_MODES & {m.strip().lower() for m in modes}:
        raise A2AError(
            -32005, "acceptedOutputModes: this agent answers in text/plain, which is not among them"
        )
    if message.role not in ("ROLE_USER", "user"):
        raise invalid_params("message.role: the client's messages are the user's (ROLE_USER)")
    if message.reference_task_ids:
        raise invalid_params(
            "message.referenceTaskIds: not supported here; continue a conversation with its "
            "contextId instead"
        )
    if message.extensions:
        raise A2AError(-32008, f"message.extensions: none is supported ({message.extensions[0]})")
    if not message.parts:
        raise invalid_params("message.parts: required, a non-empty list")
    if len(message.parts) > MAX_PARTS:
        raise invalid_params(f"message.parts: at most {MAX_PARTS}")
    sent = Sent()
    for index, part in enumerate(message.parts):
        _part(part, f"message.parts.{index}", sent)
    if len(sent.text) > CONTENT_MAX:
        raise invalid_params(f"message.parts: at most {CONTENT_MAX} characters of text in all")
    return sent


def _part(part: PartIn, where: str, sent: Sent) -> None:
    if part.text is not None:
        sent.texts.append(part.text)
        return
    if part.data is not None:
        sent.data.append(part.data)
        # The agent reads the data as JSON text.
        sent.texts.append(json.dumps(part.data, ensure_ascii=False))
        return
    raw, url = part.raw, part.url
    name, mime = part.filename, part.media_type
    if part.file is not None:
        raw, url = part.file.bytes_, part.file.uri
        name, mime = part.file.name, part.file.mime_type
    if url and not raw:
        if not url.startswith("data:"):
            raise A2AError(
                -32005,
                f"{where}: this server fetches no URLs (as /v1); send the file's bytes in "
                "the part (raw, base64) or as a data: URI (data:<type>;base64,<data>)",
            )
        try:
            given, raw = data_url(url, where)
        except OpenAIError as exc:
            raise invalid_params(exc.message) from None
        mime = mime or given
    if not raw:
        raise invalid_params(f"{where}: a part needs text, data or a file's bytes")
    try:
        base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError):
        raise invalid_params(f"{where}: the file's bytes are not valid base64") from None
    name = (name or "").strip()[:200]
    try:
        # The thread API's type check: a malformed type is refused, naming the part.
        mime = clean_mime_type(mime or (mimetypes.guess_type(name)[0] if name else None))
    except Invalid as exc:
        raise invalid_params(f"{where}: {exc.message}") from None
    count = len(sent.files) + 1
    sent.files.append(
        NewAttachment(
            name=name or f"file-{count}{mimetypes.guess_extension(mime) or ''}",
            mime_type=mime,
            data=raw,
        )
    )


# --- what the server answers (1.0) ------------------------------------------------------------

_STATES = {
    "submitted": "TASK_STATE_SUBMITTED",
    "working": "TASK_STATE_WORKING",
    "input-required": "TASK_STATE_INPUT_REQUIRED",
    "completed": "TASK_STATE_COMPLETED",
    "canceled": "TASK_STATE_CANCELED",
    "failed": "TASK_STATE_FAILED",
    "rejected": "TASK_STATE_REJECTED",
}


def message(said: Said, view: TaskView) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"text": said.text}] if said.text else []
    parts += [{"text": f"[attachment: {name}]"} for name in said.files]
    return {
        "messageId": said.id,
        "contextId": view.context_id,
        "taskId": view.id,
        "role": "ROLE_USER" if said.role == "user" else "ROLE_AGENT",
        "parts": parts or [{"text": ""}],
    }


def _status_message(view: TaskView) -> dict[str, Any] | None:
    text = view.detail or (view.answer if view.state == "completed" else "")
    if not text:
        return None
    said = Said(f"{view.id}-status", "agent", text)
    return message(said, view)


def status(view: TaskView) -> dict[str, Any]:
    body: dict[str, Any] = {
        "state": _STATES[view.state],
        "timestamp": view.timestamp.isoformat().replace("+00:00", "Z"),
    }
    said = _status_message(view)
    if said is not None:
        body["message"] = said
    return body


def answer_artifact(view: TaskView, text: str) -> dict[str, Any]:
    return {
        "artifactId": f"{view.id}-{ANSWER_ARTIFACT}",
        "name": ANSWER_ARTIFACT,
        "parts": [{"text": text}],
    }


def file_artifact(view: TaskView, item: FileArtifact, base_url: str) -> dict[str, Any]:
    part: dict[str, Any] = {"filename": item.name, "mediaType": item.mime_type}
    if item.data is not None:
        part["raw"] = base64.b64encode(item.data).decode()
    else:
        # Too large to inline: the thread API's file read, with the same API key.
        part["url"] = f"{base_url}/api/threads/{view.context_id}/fs{quote(item.path)}"
    return {
        "artifactId": f"{view.id}-file:{item.path}",
        "name": item.path,
        "parts": [part],
        "metadata": {"path": item.path, "size": item.size},
    }


def task(view: TaskView, base_url: str, history_length: int | None = None) -> dict[str, Any]:
    history = ([view.question] if view.question else []) + list(view.replies)
    if history_length is not None and history_length >= 0:
        history = history[-history_length:] if history_length else []
    artifacts = [answer_artifact(view, view.answer)] if view.answer else []
    artifacts += [file_artifact(view, f, base_url) for f in view.files]
    body: dict[str, Any] = {
        "id": view.id,
        "contextId": view.context_id,
        "status": status(view),
        "history": [message(s, view) for s in history],
    }
    if artifacts:
        body["artifacts"] = artifacts
    return body


def status_update(view: TaskView) -> dict[str, Any]:
    return {
        "statusUpdate": {"taskId": view.id, "contextId": view.context_id, "status": status(view)}
    }


def artifact_update(
    view: TaskView, artifact: dict[str, Any], *, append: bool, last: bool
) -> dict[str, Any]:
    return {
        "artifactUpdate": {
            "taskId": view.id,
            "contextId": view.context_id,
            "artifact": artifact,
            "append": append,
            "lastChunk": last,
        }
    }


# --- the Agent Card ----------------------------------------------------------------------------


def card(agent: Agent, endpoint: str, skills: list[dict[str, Any]]) -> dict[str, Any]:
    """The agent's card: 1.0's fields, and 0.3's ``url``/``protocolVersion`` beside them
    (a 1.0 client reads ``supportedInterfaces`` and drops them)."""
    return {
        "name": agent.name,
        "description": agent.description or agent.title or agent.name,
        "version": agent.updated_at.strftime("%Y%m%d%H%M%S"),
        "supportedInterfaces": [
            {"url": endpoint, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": endpoint, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
        ],
        "capabilities": {"streaming": True, "pushNotifications": False},
        "securitySchemes": {
            "bearer": {
                "httpAuthSecurityScheme": {
                    "scheme": "Bearer",
                    "description": "An API key of this platform (the studio's API keys, or "
                    "POST /api/api-keys): the agent acts with its owner's rights.",
                }
            }
        },
        "securityRequirements": [{"schemes": {"bearer": {"list": []}}}],
        "defaultInputModes": ["text/plain", "application/json", "*/*"],
        "defaultOutputModes": ["text/plain", "*/*"],
        "skills": skills,
        # A2A 0.3 clients read these.
        "url": endpoint,
        "protocolVersion": "0.3.0",
        "preferredTransport": "JSONRPC",
    }


# --- 0.3 ---------------------------------------------------------------------------------------


def v03(value: Any) -> Any:
    """A 1.0 result in 0.3's shape: ``{"task": …}`` unwrapped with ``"kind"`` on it, enum
    names in lower case, parts with their ``kind``."""
    if isinstance(value, dict) and len(value) == 1:
        [(key, inner)] = value.items()
        kinds = {
            "task": "task",
            "message": "message",
            "statusUpdate": "status-update",
            "artifactUpdate": "artifact-update",
        }
        if key in kinds:
            out = _v03_object(inner)
            out["kind"] = kinds[key]
            if key == "statusUpdate":
                state = inner["status"]["state"]
                out["final"] = state not in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")
            return out
    return _v03_object(value)


def _v03_object(value: Any) -> Any:
    if isinstance(value, list):
        return [_v03_object(v) for v in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, item in value.items():
        if key == "state" and isinstance(item, str):
            out[key] = item.removeprefix("TASK_STATE_").lower().replace("_", "-")
        elif key == "role" and isinstance(item, str):
            out[key] = item.removeprefix("ROLE_").lower()
        elif key == "parts" and isinstance(item, list):
            out[key] = [_v03_part(p) for p in item]
        else:
            out[key] = _v03_object(item)
    if "messageId" in out:
        out["kind"] = "message"
    if "status" in out and "id" in out:
        out["kind"] = "task"
    return out


def _v03_part(part: dict[str, Any]) -> dict[str, Any]:
    if "text" in part:
        return {"kind": "text", "text": part["text"]}
    if "data" in part:
        return {"kind": "data", "data": part["data"]}
    file: dict[str, Any] = {"name": part.get("filename"), "mimeType": part.get("mediaType")}
    if "raw" in part:
        file["bytes"] = part["raw"]
    else:
        file["uri"] = part.get("url")
    return {"kind": "file", "file": file}
