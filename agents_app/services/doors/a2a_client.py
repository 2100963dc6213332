"""The A2A client: remote A2A agents (``A2aAgent`` rows) asked by the engine's ``a2a:<name>``
tools (``runtime.tools.a2a_tools``; docs/api.md "A2A client").

It speaks A2A's JSON-RPC binding with 0.3's method names (``message/stream``, or
``message/send`` when the card says the agent does not stream), which 1.0 servers that keep
0.3 clients (ours among them) and 0.3 servers both answer, with httpx directly: the a2a-sdk
is a dev dependency here, and the wire is two methods. Every request goes through the egress
policy (``runtime.core.egress``, checked on each request; redirects are not followed, a 3xx
is an HTTP error), header values are resolved from env values only when sent, and no error,
result, progress text or cached card holds a header's value or an env value it used: a
remote server may echo what it was sent, so everything it says is redacted by those values.
A remote answer is bounded in bytes (``REPLY_MAX_BYTES``, ``CARD_MAX_BYTES``) as well as
in time (the definition's ``timeoutMs``).

**Files.** A file part of the remote task's artifacts (0.3's ``{kind: "file", file: {bytes |
uri, name, mimeType}}``, or 1.0's ``raw``/``url``) becomes an ``A2aFile`` the tool writes
to the calling thread: inline bytes as sent (inside the reply's bound), a ``uri`` fetched
through the egress policy with at most ``file_max_bytes()`` (the doors' upload limit,
``DATA_UPLOAD_MAX_MEMORY_SIZE``), the definition's headers sent only to the endpoint's own
origin; at most ``MAX_FILES`` per call. Names are redacted, text files' contents too; a file
that cannot be read is named with the reason instead.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import codecs
import json
import logging
import mimetypes
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import httpx
from asgiref.sync import async_to_sync, sync_to_async
from django.conf import settings
from django.utils import timezone

from agents_app.models import A2aAgent
from agents_app.services.definitions.a2a_agents import remote_definition
from agents_app.services.doors import a2a_cards
from runtime.core import egress
from runtime.core.a2a_agents import CARD_PATH, A2aAgentDefinition, card_url
from runtime.core.env_refs import MissingReference, expand
from runtime.core.mime_types import MimeTypeError, normalize_mime_type
from runtime.core.redaction import Redactor
from runtime.tools.a2a_tools import A2aAgentInfo, A2aFile, A2aReply, A2aUnavailable, Progress

log = logging.getLogger(__name__)
EnvLookup = Callable[[str], Awaitable[str | None]]
CARD_TIMEOUT_SECONDS = 15
DESCRIPTION_MAX = 1024
# What one remote answer may weigh (decoded bytes, the whole stream): more is a tool error,
# not memory spent on a server that never stops talking.
REPLY_MAX_BYTES = 4 * 1024 * 1024
CARD_MAX_BYTES = 512 * 1024
# A live progress line in the chat, and a remote state's name, are short by nature.
PROGRESS_TEXT_MAX = 2000
STATE_MAX = 64
STREAM_METHOD, SEND_METHOD = "message/stream", "message/send"
MAX_FILES = 20  # file artifacts saved from one call
FILE_NAME_MAX = 200
FILE_FETCH_TIMEOUT_SECONDS = 60


def file_max_bytes() -> int:
    """What one remote file may weigh: what a door takes as one upload."""
    return int(settings.DATA_UPLOAD_MAX_MEMORY_SIZE)


async def resolved_headers(d: A2aAgentDefinition, env: EnvLookup | None) -> dict[str, str]:
    """``d``'s headers with each ``${NAME}`` filled in from env values."""
    headers, _ = await _headers_and_redactor(d, env)
    return headers


async def _headers_and_redactor(
    d: A2aAgentDefinition, env: EnvLookup | None
) -> tuple[dict[str, str], Redactor]:
    """The resolved headers, and a redactor of every value they hold (each header's whole
    value and each env value in it) for what the remote server says back."""
    used: list[str] = []

    async def lookup(name: str) -> str | None:
        value = await env(name) if env is not None else None
        if value:
            used.append(value)
        return value

    out, secret = {}, []
    for key, template in d.headers.items():
        try:
            before = len(used)
            out[key] = await expand(template, lookup)
            if len(used) > before:  # a literal header (no ${NAME}) is no secret
                secret.append(out[key])
        except MissingReference as missing:
            raise A2aUnavailable(
                f"header {key} uses env value {missing.name}, which is not set for this thread"
            ) from None
    # Unnamed markers: the remote's text reaches people who need not know the env names.
    return out, Redactor(("", value) for value in [*used, *secret])


def _failure(
    d: A2aAgentDefinition, exc: Exception, redactor: Redactor | None = None
) -> A2aUnavailable:
    """``exc`` in words a model and a person can act on (never a header's value)."""
    said = _failure_words(d, exc)
    return A2aUnavailable(redactor.text(said) if redactor is not None else said)


def _failure_words(d: A2aAgentDefinition, exc: Exception) -> str:
    host = egress.host_of(d.url)
    if isinstance(exc, egress.EgressRefused):
        return f"the egress policy does not allow {host}: {exc}"
    if isinstance(exc, httpx.HTTPStatusError):
        return f"{host} answered HTTP {exc.response.status_code}"
    if isinstance(exc, httpx.TimeoutException):
        return f"{host} did not answer in time"
    if isinstance(exc, httpx.TransportError):
        return f"could not connect to {host} ({type(exc).__name__})"
    if isinstance(exc, RecursionError):
        return f"{host} did not answer in A2A's JSON (nested too deeply)"
    if isinstance(exc, ValueError):
        return f"{host} did not answer in A2A's JSON ({exc})"
    return str(exc)


# --- the card ------------------------------------------------------------------------------


async def fetch_card(d: A2aAgentDefinition, env: EnvLookup | None) -> dict[str, Any]:
    """The remote Agent Card (``A2aUnavailable`` in words when it cannot be read), with any
    header value it echoes redacted (it is cached, shown in the studio and told the model)."""
    headers, redactor = await _headers_and_redactor(d, env)
    try:
        async with (
            egress.client(timeout=CARD_TIMEOUT_SECONDS) as http,
            http.stream("GET", card_url(d.url), headers=headers) as response,
        ):
            response.raise_for_status()
            raw = await _bounded_body(response, d, CARD_MAX_BYTES)
        card = json.loads(raw)
    except (httpx.HTTPError, ValueError, RecursionError) as exc:
        raise _failure(d, exc, redactor) from None
    if not isinstance(card, dict) or not isinstance(card.get("name"), str):
        raise A2aUnavailable(f"{card_url(d.url)} is not an Agent Card (no name)")
    redacted: dict[str, Any] = redactor.data(card)
    return redacted


async def _bounded_body(response: httpx.Response, d: A2aAgentDefinition, limit: int) -> bytes:
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) > limit:
            raise _too_large(d, limit)
    return bytes(body)


def _too_large(d: A2aAgentDefinition, limit: int) -> A2aUnavailable:
    return A2aUnavailable(
        f"{egress.host_of(d.url)} sent more than {limit // 1024} KiB in one answer, "
        "more than an A2A call may read; the call was stopped"
    )


def card_description(card: dict[str, Any]) -> str:
    """What the model reads about a remote agent: its description, then its skills."""
    lines = [str(card.get("description") or card.get("name") or "").strip()]
    skills = [s for s in card.get("skills") or [] if isinstance(s, dict)]
    if skills:
        lines.append("Skills:")
        for skill in skills:
            name = str(skill.get("name") or skill.get("id") or "").strip()
            about = str(skill.get("description") or "").strip()
            lines.append(f"- {name}: {about}" if about and about != name else f"- {name}")
    text = "\n".join(line for line in lines if line)
    return text[: DESCRIPTION_MAX - 1] + "…" if len(text) > DESCRIPTION_MAX else text


def card_endpoint(card: dict[str, Any] | None, d: A2aAgentDefinition) -> str:
    """Where JSON-RPC goes: the card's JSON-RPC interface for 0.3 (then any JSON-RPC one,
    then its ``url``), else the definition's URL without the card path."""
    interfaces = [i for i in (card or {}).get("supportedInterfaces") or [] if isinstance(i, dict)]
    jsonrpc = [i for i in interfaces if i.get("protocolBinding") == "JSONRPC" and i.get("url")]
    for found in [i for i in jsonrpc if str(i.get("protocolVersion")).startswith("0.3")] + jsonrpc:
        return str(found["url"])
    if card and isinstance(card.get("url"), str) and card["url"]:
        return str(card["url"])
    return d.url.removesuffix(CARD_PATH) if d.url.endswith(CARD_PATH) else d.url


def streams(card: dict[str, Any] | None) -> bool:
    capabilities = (card or {}).get("capabilities") or {}
    return bool(isinstance(capabilities, dict) and capabilities.get("streaming"))


# --- one call ------------------------------------------------------------------------------


@dataclass
class _Task:
    """What the events of one call said, folded."""

    state: str = "submitted"
    context_id: str | None = None
    task_id: str | None = None
    status_text: str = ""
    artifacts: dict[str, list[str]] = field(default_factory=dict)
    files: dict[str, list[RemoteFile]] = field(default_factory=dict)  # by artifact id

    def reply(self) -> A2aReply:
        texts = ["".join(parts) for parts in self.artifacts.values() if "".join(parts).strip()]
        text = "\n\n".join(texts) if texts and self.state == "completed" else self.status_text
        return A2aReply(self.state, text, self.context_id, self.task_id)


@dataclass(frozen=True)
class RemoteFile:
    """A file part as the remote sent it: base64 bytes or a URI to fetch."""

    name: str
    mime_type: str
    data: str | None
    uri: str | None


def _file_parts(parts: Any) -> list[RemoteFile]:
    """The file parts of ``parts`` (0.3's ``file`` object, or 1.0's ``raw``/``url``)."""
    out = []
    for part in map(_obj, parts if isinstance(parts, list) else []):
        file = _obj(part.get("file")) if part.get("kind") == "file" else part
        data = file.get("bytes") if "file" in part else part.get("raw")
        uri = file.get("uri") if "file" in part else part.get("url")
        if not isinstance(data, str) and not isinstance(uri, str):
            continue
        name = file.get("name") if "file" in part else part.get("filename")
        mime = file.get("mimeType") if "file" in part else part.get("mediaType")
        out.append(
            RemoteFile(
                str(name or "")[:FILE_NAME_MAX],
                str(mime or "")[:STATE_MAX],
                data if isinstance(data, str) else None,
                uri if isinstance(uri, str) and not isinstance(data, str) else None,
            )
        )
    return out


def _text(parts: Any) -> str:
    if not isinstance(parts, list):
        return ""
    return "".join(str(p.get("text", "")) for p in parts if isinstance(p, dict) and "text" in p)


def _obj(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one: a remote's odd shapes are
    read as missing fields, not a crash."""
    return value if isinstance(value, dict) else {}


def _id(value: Any, default: str | None) -> str | None:
    return value if isinstance(value, str) and value else default


def fold(task: _Task, result: Any, progress: Progress | None) -> None:
    """One JSON-RPC result (a Task, a Message, a status or artifact update) into ``task``."""
    if not isinstance(result, dict):
        raise ValueError("a result that is not an object")
    kind = result.get("kind")
    task.context_id = _id(result.get("contextId"), task.context_id)
    if kind == "message":
        task.state, task.status_text = "completed", _text(result.get("parts"))
        return
    if kind in ("task", "status-update"):
        task.task_id = _id(result.get("id" if kind == "task" else "taskId"), task.task_id)
        status = _obj(result.get("status"))
        task.state = str(status.get("state") or task.state)[:STATE_MAX]
        said = _text(_obj(status.get("message")).get("parts"))
        task.status_text = said or task.status_text
        if progress is not None and kind == "status-update":
            progress(task.state, said[:PROGRESS_TEXT_MAX])
        artifacts = result.get("artifacts") if kind == "task" else None
        for artifact in map(_obj, artifacts if isinstance(artifacts, list) else []):
            task.artifacts[str(artifact.get("artifactId"))] = [_text(artifact.get("parts"))]
            task.files[str(artifact.get("artifactId"))] = _file_parts(artifact.get("parts"))
        return
    if kind == "artifact-update":
        artifact = _obj(result.get("artifact"))
        key = str(artifact.get("artifactId"))
        text = _text(artifact.get("parts"))
        if result.get("append"):
            task.artifacts.setdefault(key, []).append(text)
            task.files.setdefault(key, []).extend(_file_parts(artifact.get("parts")))
        else:
            task.artifacts[key] = [text]
            task.files[key] = _file_parts(artifact.get("parts"))
        return
    raise ValueError(f"a result of unknown kind {str(kind)[:STATE_MAX]!r}")


def _result(body: Any) -> Any:
    if not isinstance(body, dict) or body.get("jsonrpc") != "2.0":
        raise ValueError("not a JSON-RPC 2.0 response")
    error = body.get("error")
    if isinstance(error, dict):
        raise A2aUnavailable(
            f"it answered with JSON-RPC error {error.get('code')}: {error.get('message')}"
        )
    return body.get("result")


async def _sse_data(
    response: httpx.Response, d: A2aAgentDefinition, limit: int
) -> AsyncIterator[Any]:
    """The JSON of each server-sent event, reading at most ``limit`` bytes in all (a line
    that never ends is bounded too: lines are split here, not buffered by httpx)."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    received, pending, data = 0, "", []
    async for chunk in response.aiter_bytes():
        received += len(chunk)
        if received > limit:
            raise _too_large(d, limit)
        *lines, pending = (pending + decoder.decode(chunk)).split("\n")
        for line in (line.removesuffix("\r") for line in lines):
            if line.startswith("data:"):
                data.append(line[5:].removeprefix(" "))
            elif not line and data:
                yield json.loads("\n".join(data))
                data = []
    pending += decoder.decode(b"", final=True)
    if pending.startswith("data:"):
        data.append(pending[5:].removeprefix(" "))
    if data:
        yield json.loads("\n".join(data))


def request_body(
    method: str, text: str, context_id: str | None, task_id: str | None
) -> dict[str, Any]:
    message: dict[str, Any] = {
        "kind": "message",
        "messageId": uuid.uuid4().hex,
        "role": "user",
        "parts": [{"kind": "text", "text": text}],
    }
    if context_id:
        message["contextId"] = context_id
    if task_id:
        message["taskId"] = task_id
    return {
        "jsonrpc": "2.0",
        "id": uuid.uuid4().hex,
        "method": method,
        "params": {"message": message},
    }


async def ask(
    d: A2aAgentDefinition,
    card: dict[str, Any] | None,
    text: str,
    *,
    context_id: str | None,
    task_id: str | None,
    env: EnvLookup,
    progress: Progress,
) -> A2aReply:
    """Send ``text`` and fold every event until the task finishes or needs input."""
    method = STREAM_METHOD if streams(card) else SEND_METHOD
    body = request_body(method, text, context_id, task_id)
    headers, redactor = await _headers_and_redactor(d, env)
    task = _Task(context_id=context_id, task_id=task_id)

    def redacted_progress(state: str, said: str) -> None:
        progress(redactor.text(state), redactor.text(said))

    if method == STREAM_METHOD:
        headers["Accept"] = "text/event-stream"
    try:
        async with (
            asyncio.timeout(d.timeout_ms / 1000),
            egress.client(timeout=None) as http,
            http.stream("POST", card_endpoint(card, d), json=body, headers=headers) as response,
        ):
            response.raise_for_status()
            if method == SEND_METHOD:
                raw = await _bounded_body(response, d, REPLY_MAX_BYTES)
                fold(task, _result(json.loads(raw)), redacted_progress)
            else:
                async for event in _sse_data(response, d, REPLY_MAX_BYTES):
                    fold(task, _result(event), redacted_progress)
    except TimeoutError:
        raise A2aUnavailable(
            f"no answer within {d.timeout_ms / 1000:g} s (its task was {redactor.text(task.state)})"
        ) from None
    except A2aUnavailable as exc:  # a JSON-RPC error's words are the remote's
        raise A2aUnavailable(redactor.text(str(exc))) from None
    except (httpx.HTTPError, ValueError, RecursionError) as exc:
        raise _failure(d, exc, redactor) from None
    reply = task.reply()
    sent = [f for files in task.files.values() for f in files]
    files = await remote_files(sent, d, card_endpoint(card, d), headers, redactor)
    return A2aReply(
        redactor.text(reply.state),
        redactor.text(reply.text),
        reply.context_id,
        reply.task_id,
        tuple(files),
    )


# --- the remote task's files ---------------------------------------------------------------


async def remote_files(
    sent: list[RemoteFile],
    d: A2aAgentDefinition,
    endpoint: str,
    headers: dict[str, str],
    redactor: Redactor,
) -> list[A2aFile]:
    """The bytes of each file the remote task returned (see the module doc)."""
    out = []
    for index, item in enumerate(sent):
        name = redactor.text(item.name) or f"file-{index + 1}"
        mime = _mime(item.mime_type, name)
        if index >= MAX_FILES:
            out.append(A2aFile(name, mime, None, f"more than {MAX_FILES} files in one answer"))
            continue
        try:
            data = _decoded(item.data) if item.data is not None else None
            if data is None:
                data = await _fetched(str(item.uri), d, endpoint, headers)
        except A2aUnavailable as exc:
            out.append(A2aFile(name, mime, None, redactor.text(str(exc))))
            continue
        if len(data) > file_max_bytes():
            out.append(A2aFile(name, mime, None, _over(len(data))))
            continue
        out.append(A2aFile(name, mime, _redacted(data, mime, redactor)))
    return out


def _mime(raw: str, name: str) -> str:
    try:
        return normalize_mime_type(raw or mimetypes.guess_type(name)[0])
    except MimeTypeError:
        return "application/octet-stream"


def _decoded(data: str) -> bytes:
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise A2aUnavailable("its bytes are not valid base64") from None


def _over(size: int) -> str:
    return f"{size} bytes, more than the {file_max_bytes()} bytes a file may weigh"


def _same_origin(url: str, endpoint: str) -> bool:
    a, b = httpx.URL(url), httpx.URL(endpoint)
    return (a.scheme, a.host, a.port) == (b.scheme, b.host, b.port)


async def _fetched(
    uri: str, d: A2aAgentDefinition, endpoint: str, headers: dict[str, str]
) -> bytes:
    """``uri``'s bytes, through the egress policy; the definition's headers (credentials)
    only when it is on the endpoint's own origin, never to a host it names."""
    if not uri.startswith(("http://", "https://")):
        raise A2aUnavailable("its URI is not http(s)")
    sent = {k: v for k, v in headers.items() if k.lower() != "accept"}
    try:
        sent = sent if _same_origin(uri, endpoint) else {}
        async with (
            egress.client(timeout=FILE_FETCH_TIMEOUT_SECONDS) as http,
            http.stream("GET", uri, headers=sent) as response,
        ):
            response.raise_for_status()
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > file_max_bytes():
                    raise A2aUnavailable(_over(len(body)))
            return bytes(body)
    except egress.EgressRefused as exc:
        raise A2aUnavailable(
            f"the egress policy does not allow {egress.host_of(uri)}: {exc}"
        ) from None
    except httpx.HTTPStatusError as exc:
        code = exc.response.status_code
        raise A2aUnavailable(f"{egress.host_of(uri)} answered HTTP {code} for it") from None
    except (httpx.HTTPError, ValueError) as exc:
        raise A2aUnavailable(
            f"could not fetch it from {egress.host_of(uri)} ({type(exc).__name__})"
        ) from None


def _redacted(data: bytes, mime: str, redactor: Redactor) -> bytes:
    """Text files with every header and env value the call used replaced, as the
    remote's words are (binary files are stored as sent)."""
    if not (mime.startswith("text/") or mime.endswith(("json", "xml", "yaml"))):
        return data
    try:
        return redactor.text(data.decode("utf-8")).encode("utf-8")
    except UnicodeDecodeError:
        return data


# --- the engine's A2aAgents ----------------------------------------------------------------


def _row(name: str) -> A2aAgent | None:
    return A2aAgent.objects.filter(name=name, enabled=True).first()


def _remember(name: str, card: dict[str, Any] | None, problem: str = "") -> None:
    changes: dict[str, Any] = {"last_error": problem}
    if card is not None:
        changes |= {"card": card, "card_fetched_at": timezone.now()}
    A2aAgent.objects.filter(name=name).update(**changes)


# Background card refreshes under way (module-wide: an engine may build many of these).
_refreshing: set[asyncio.Task[None]] = set()


class DjangoA2aAgents:
    """``runtime.tools.a2a_tools.A2aAgents`` over the ``A2aAgent`` table: cards are fetched
    on first use and cached on the row (the studio's "Fetch the card" refreshes them, and a
    card older than ``a2a_cards.CARD_REFRESH`` is refreshed in the background); a failed
    fetch is not tried again within its backoff (``a2a_cards``)."""

    async def _card(
        self, row: A2aAgent, d: A2aAgentDefinition, env: EnvLookup | None
    ) -> tuple[dict[str, Any] | None, str]:
        """The card (cached or fetched now), or ``None`` and why not in words."""
        if row.card is not None:
            stale = _old(row) and await a2a_cards.backoff(d) is None
            if stale and await a2a_cards.claim_refresh(d):
                task = asyncio.create_task(self._refresh(d, env))
                _refreshing.add(task)  # held, or the loop may drop it unfinished
                task.add_done_callback(_refreshing.discard)
            return dict(row.card), ""
        waiting = await a2a_cards.backoff(d)
        if waiting is not None:
            return None, waiting.words()
        return await self._fetch(d, env)

    async def _fetch(
        self, d: A2aAgentDefinition, env: EnvLookup | None
    ) -> tuple[dict[str, Any] | None, str]:
        try:
            card = await fetch_card(d, env)
        except A2aUnavailable as exc:
            waiting = await a2a_cards.failed(d, f"its card could not be read: {exc}")
            await sync_to_async(_remember)(d.name, None, _last_error(exc, waiting))
            return None, waiting.words()
        await a2a_cards.succeeded(d)
        await sync_to_async(_remember)(d.name, card)
        return card, ""

    async def _refresh(self, d: A2aAgentDefinition, env: EnvLookup | None) -> None:
        try:
            card, problem = await self._fetch(d, env)
        except Exception:  # noqa: BLE001 - a background refresh must not fail a step
            log.warning("refreshing the card of A2A agent %s failed", d.name, exc_info=True)
            return
        if card is None:
            log.warning("A2A agent %s keeps its cached card: %s", d.name, problem)

    async def agent(self, name: str, env: EnvLookup | None = None) -> A2aAgentInfo | None:
        row = await sync_to_async(_row)(name)
        if row is None:
            return None
        d = remote_definition(row)
        if d.description:
            return A2aAgentInfo(name, d.description)
        card, problem = await self._card(row, d, env)
        if card is None:
            # Offered without a card, the model would call an agent that cannot answer.
            log.warning("A2A agent %s is left out of this step: %s", name, problem)
            return None
        return A2aAgentInfo(name, card_description(card) or f"Ask the remote agent {name} (A2A).")

    async def send(
        self,
        name: str,
        message: str,
        *,
        context_id: str | None,
        task_id: str | None,
        env: EnvLookup,
        progress: Progress,
    ) -> A2aReply:
        row = await sync_to_async(_row)(name)
        if row is None:
            raise A2aUnavailable("it is no longer defined or is disabled")
        d = remote_definition(row)
        card, problem = await self._card(row, d, env)
        if card is None:  # its endpoint and whether it streams are the card's to say
            raise A2aUnavailable(problem)
        return await ask(
            d, card, message, context_id=context_id, task_id=task_id, env=env, progress=progress
        )


def _old(row: A2aAgent) -> bool:
    fetched = row.card_fetched_at
    return fetched is None or timezone.now() - fetched > a2a_cards.CARD_REFRESH


def _last_error(exc: A2aUnavailable, waiting: a2a_cards.Backoff) -> str:
    """What the studio shows: why, and when the card is asked for again at the earliest."""
    again = datetime.fromtimestamp(waiting.until, UTC).strftime("%H:%M:%S UTC")
    return f"Could not read the card: {exc}. Not tried again before {again}."


def card_refresh(*, row: A2aAgent, env: EnvLookup | None = None) -> dict[str, Any]:
    """Fetch the card now and cache it (the studio's button, which ignores the backoff: a
    person asked); ``A2aUnavailable`` in words."""
    d = remote_definition(row)
    try:
        card = async_to_sync(fetch_card)(d, env)
    except A2aUnavailable as exc:
        waiting = async_to_sync(a2a_cards.failed)(d, f"its card could not be read: {exc}")
        _remember(d.name, None, _last_error(exc, waiting))
        raise
    async_to_sync(a2a_cards.succeeded)(d)
    _remember(d.name, card)
    return card
