"""AG-UI runs (``/ag-ui``, docs/api.md "AG-UI"): what a ``RunAgentInput`` asks, and what a run
has written so far.

An AG-UI front end posts the whole conversation it holds (``messages``) with a
``threadId`` it chose; here a run is one turn of a thread, as ``/v1``'s: the **last
message, the user's, is the post**, and the earlier ones are already in the thread (for a
thread that is new here they become its history, as ``/v1`` stores a new conversation's).
``run_input`` reads the body into a ``RunInput``, refusing what the agent would not honour
rather than ignoring it: client-run ``tools`` (the agent runs its own, on the server),
``context``, ``forwardedProps``, a ``state`` that is not an object. A run with ``resume``
answers the interrupts the last run ended with (``ag_ui_interrupts``) and posts nothing. The
``state`` object is the thread's key-values (``services/threads/values.py``): the keys it
sets are written before the post (``state_writes`` says which differ), and the run
streams them back as ``STATE_SNAPSHOT``/``STATE_DELTA`` (``thread_state``,
``state_patch``). ``run_rows`` reads the turn's stored messages (text, tool calls, tool
results) for the edge (``api/ag_ui_v1.py``) to turn into events.

Nothing here runs anything: the orchestration (``orchestration/ag_ui_runs.py``) opens the
turn with ``/v1``'s ``turn_open`` and posts it with ``turn_post``. Refusals are
``OpenAIError`` (status, sentence, the field in ``param``), the doors' shared shape for an
HTTP error before a stream starts.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from typing import Any

from agents_app.base.errors import DomainError, Invalid
from agents_app.models import Message, ThreadValue
from agents_app.services.doors.ag_ui_interrupts import ResumeAnswer, resume_entries
from agents_app.services.doors.openai_compat import MAX_MESSAGES, Said, invalid
from agents_app.services.threads.files import clean_mime_type
from agents_app.services.threads.messages import CONTENT_MAX, NewAttachment
from agents_app.services.threads.values import RESERVED, RESERVED_PREFIXES, clean_key, serialized

THREAD_ID_MAX = 194  # the thread's tag "ag-ui:<threadId>" stays within a tag's 200 characters
TAG_PREFIX = "ag-ui:"
RUN_ID_MAX = 200

_FIELDS = frozenset(
    {
        "threadId",
        "runId",
        "parentRunId",
        "protocolVersion",
        "messages",
        "state",
        "tools",
        "context",
        "forwardedProps",
        "resume",
    }
)
_ROLES = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}
_MEDIA = ("image", "audio", "video", "document")

TOOLS_REFUSED = (
    "tools: this door runs the agent with its own tools, on the server, and streams their "
    "calls and results; it cannot hand tool calls to the front end to run. Send the run "
    "without tools (the agent's tools are defined in its prompt)."
)


@dataclass(frozen=True)
class RunInput:
    """One run a front end asks for: ``message`` posted to the thread ``thread_id`` names
    (``earlier``, the messages before it, first when that thread is new here:
    ``run_history``), ``state`` written to its values."""

    thread_id: str
    run_id: str
    message: Said | None  # None for a resume: it answers interrupts, it posts nothing
    earlier: list[Any]
    state: dict[str, Any] | None
    resume: list[ResumeAnswer] = field(default_factory=list)


def thread_tag(thread_id: str) -> str:
    """The tag that remembers which of our threads a front end's own ``threadId`` is."""
    return TAG_PREFIX + thread_id


def _absent(value: Any) -> bool:
    return value is None or value == [] or value == {} or value == ""


def _text(value: Any, param: str, *, limit: int = CONTENT_MAX) -> str:
    if not isinstance(value, str):
        raise invalid(f"{param}: expected a string", param)
    if len(value) > limit:
        raise invalid(f"{param}: at most {limit} characters", param)
    return value


def _object(value: Any, param: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise invalid(f"{param}: expected an object", param)
    return value


def run_input(body: Any) -> RunInput:
    """A ``POST /ag-ui/<agent>`` body (AG-UI's ``RunAgentInput``, camelCase)."""
    body = _object(body, "body")
    for key in body:
        if key not in _FIELDS:
            raise invalid(
                f"Unsupported field: {key[:100]!r} (a RunAgentInput has threadId, runId, "
                "messages, state, tools, context, forwardedProps, resume)",
                key,
            )
    _refuse(body)
    thread_id = _text(body.get("threadId"), "threadId", limit=THREAD_ID_MAX).strip()
    run_id = _text(body.get("runId"), "runId", limit=RUN_ID_MAX).strip()
    if not thread_id or not run_id:
        raise invalid("threadId and runId: required, non-empty strings", "threadId")
    for key in ("parentRunId", "protocolVersion"):
        if body.get(key) is not None:
            _text(body[key], key, limit=RUN_ID_MAX)
    raw = body.get("messages")
    state = _run_state(body.get("state"))
    if not _absent(body.get("resume")):
        # A resume answers the interrupts that ended the last run; its messages are the
        # conversation the front end holds, which the thread holds already.
        if not isinstance(raw, list):
            raise invalid("messages: required, a list", "messages")
        return RunInput(thread_id, run_id, None, [], state, resume_entries(body["resume"]))
    if not isinstance(raw, list) or not raw:
        raise invalid(
            "messages: required, a non-empty list ending with the user's message", "messages"
        )
    if len(raw) > MAX_MESSAGES:
        raise invalid(f"messages: at most {MAX_MESSAGES}", "messages")
    message = _message(raw[-1], f"messages.{len(raw) - 1}", last=True)
    return RunInput(thread_id, run_id, message, raw[:-1], state)


def _run_state(state: Any) -> dict[str, Any] | None:
    if _absent(state):
        return None
    if not isinstance(state, dict):
        raise invalid(
            "state: an object (the thread's key-values, key → JSON value) or null", "state"
        )
    _state_check(state)
    return state


def _state_check(state: dict[str, Any]) -> None:
    """Each key and value as the thread's values take them (before anything is written)."""
    for key, value in state.items():
        param = f"state.{key[:100]}"
        try:
            clean_key(key)
            if value is not None:
                serialized(value)
        except DomainError as exc:
            raise invalid(f"{param}: {exc.message}", param) from None


def _refuse(body: dict[str, Any]) -> None:
    """What a front end may send that this door cannot honour: refused, never ignored."""
    if not _absent(body.get("tools")):
        raise invalid(TOOLS_REFUSED, "tools", "unsupported_parameter")
    if not _absent(body.get("context")):
        raise invalid(
            "context: this door does not pass a front end's context to the agent (its prompt "
            "decides what it reads); send the facts in the user's message, or as state "
            "(the thread's values, which the agent's tools read).",
            "context",
            "unsupported_parameter",
        )
    if not _absent(body.get("forwardedProps")):
        raise invalid(
            "forwardedProps: this door takes none (the agent's own definitions decide how "
            "it runs).",
            "forwardedProps",
            "unsupported_parameter",
        )


def run_history(run: RunInput) -> list[Said]:
    """The messages before the user's, for a thread that is new here (its history). A
    thread continued here holds them already: they are not read again."""
    return [_message(m, f"messages.{i}", last=False) for i, m in enumerate(run.earlier)]


def _message(raw: Any, param: str, *, last: bool) -> Said:
    message = _object(raw, param)
    role = message.get("role")
    if last and role != "user":
        why = (
            " (a tool message answers a tool run by the front end; this door runs none)"
            if role == "tool"
            else ""
        )
        raise invalid(
            f"{param}.role: the last message must be the user's, which the agent answers{why}",
            f"{param}.role",
        )
    if role not in _ROLES:
        # Tool, activity and reasoning messages are the thread's own, streamed by an
        # earlier run: they are already in a thread continued here, and a new thread cannot
        # start from another system's tool calls.
        raise invalid(
            f"{param}.role: {str(role)[:40]!r} starts no thread here (user, assistant, "
            "system and developer messages do; send the run with a threadId of ours to "
            "continue a conversation)",
            f"{param}.role",
        )
    if not _absent(message.get("toolCalls")):
        raise invalid(
            f"{param}.toolCalls: a new thread cannot start from another system's tool calls",
            f"{param}.toolCalls",
        )
    content, attachments = _content(message.get("content"), f"{param}.content")
    if role == "user" and not content.strip() and not attachments:
        raise invalid(f"{param}.content: text or a file is required", f"{param}.content")
    return Said(_ROLES[role], content, attachments)  # type: ignore[arg-type]


def _content(value: Any, param: str) -> tuple[str, list[NewAttachment]]:
    if value is None:
        return "", []
    if isinstance(value, str):
        return _text(value, param), []
    if not isinstance(value, list) or len(value) > 100:
        raise invalid(f"{param}: a string or a list of at most 100 content parts", param)
    texts: list[str] = []
    files: list[NewAttachment] = []
    for index, raw in enumerate(value):
        where = f"{param}.{index}"
        part = _object(raw, where)
        kind = part.get("type")
        if kind == "text":
            texts.append(_text(part.get("text"), f"{where}.text"))
        elif kind in _MEDIA:
            files.append(_media(part, where, len(files) + 1))
        else:
            raise invalid(
                f"{where}.type: {str(kind)[:40]!r} is not taken here (text, image, audio, "
                "video and document are)",
                f"{where}.type",
            )
    text = "\n".join(t for t in texts if t)
    if len(text) > CONTENT_MAX:
        raise invalid(f"{param}: at most {CONTENT_MAX} characters in all", param)
    return text, files


def _media(part: dict[str, Any], where: str, number: int) -> NewAttachment:
    source = _object(part.get("source"), f"{where}.source")
    if source.get("type") != "data":
        raise invalid(
            f"{where}.source.type: this server fetches no URLs and has no file store to "
            'name; send the bytes ({"type": "data", "value": <base64>, "mimeType": …})',
            f"{where}.source.type",
        )
    data = _text(source.get("value"), f"{where}.source.value", limit=CONTENT_MAX * 64)
    try:
        base64.b64decode(data, validate=True)
        mime = clean_mime_type(_text(source.get("mimeType"), f"{where}.source.mimeType"))
    except (binascii.Error, ValueError):
        raise invalid(f"{where}.source.value: not valid base64", f"{where}.source.value") from None
    except Invalid as exc:
        raise invalid(
            f"{where}.source.mimeType: {exc.message}", f"{where}.source.mimeType"
        ) from None
    return NewAttachment(name=f"{part['type']}-{number}", mime_type=mime, data=data)


# --- state: the thread's key-values -----------------------------------------------------------


def _shown(key: str) -> bool:
    # Server-managed keys (approvals, the engine's own) are not the front end's state.
    return key not in RESERVED and not key.startswith(RESERVED_PREFIXES)


def thread_state(thread_id: str) -> dict[str, Any]:
    """The thread's key-values as AG-UI state (redacted as stored; reserved keys left out)."""
    rows = ThreadValue.objects.filter(thread_id=thread_id).order_by("key")
    return {key: value for key, value in rows.values_list("key", "value") if _shown(key)}


def state_writes(thread_id: str, state: dict[str, Any]) -> dict[str, Any]:
    """The keys of a run's ``state`` that differ from the thread's (``None``: delete). A
    front end echoes the state it was sent; writing that back unchanged would replace a
    secret kept sealed with its redacted form, so only changes are written."""
    current = thread_state(thread_id)
    return {
        key: value
        for key, value in state.items()
        if (key in current or value is not None) and current.get(key, object()) != value
    }


def _pointer(key: str) -> str:
    return "/" + key.replace("~", "~0").replace("/", "~1")


def state_patch(old: dict[str, Any], new: dict[str, Any]) -> list[dict[str, Any]]:
    """RFC 6902 operations taking ``old`` to ``new``, one per key that changed."""
    ops: list[dict[str, Any]] = [{"op": "remove", "path": _pointer(k)} for k in old if k not in new]
    for key, value in new.items():
        if key not in old:
            ops.append({"op": "add", "path": _pointer(key), "value": value})
        elif old[key] != value:
            ops.append({"op": "replace", "path": _pointer(key), "value": value})
    return ops


# --- what the run wrote -----------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """A top-level message of the turn: an agent's reply (its tool calls) or a tool's result."""

    id: str
    role: str
    content: str
    tool_calls: list[dict[str, Any]]
    tool_call_id: str | None


def run_rows(thread_id: str, question_id: str) -> list[Row]:
    """The turn's stored replies and tool results, in order (the rows ``turn_state`` reads,
    with the tool messages between them)."""
    since = (
        Message.objects.filter(thread_id=thread_id, pk=question_id)
        .values_list("created_at", flat=True)
        .first()
    )
    if since is None:
        return []
    rows = (
        Message.objects.filter(
            thread_id=thread_id,
            depth=0,
            role__in=(Message.Role.ASSISTANT, Message.Role.TOOL),
            abandoned=False,
            silent=False,
            created_at__gt=since,
        )
        # A call waiting for its decision has no result yet: it is an interrupt.
        .exclude(role=Message.Role.TOOL, status=Message.Status.PENDING)
        .order_by("created_at")
        .values_list("id", "role", "content", "tool_calls", "tool_call_id")
    )
    return [
        Row(str(pk), role, content or "", _calls(calls), call_id)
        for pk, role, content, calls, call_id in rows
    ]


def _calls(value: Any) -> list[dict[str, Any]]:
    return (
        [c for c in value if isinstance(c, dict) and c.get("id")] if isinstance(value, list) else []
    )
