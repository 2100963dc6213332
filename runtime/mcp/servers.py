"""MCP servers as definitions, and the narrow seam through which the engine calls their tools.

A prompt names an MCP tool ``mcp:<server>/<tool>`` (spec 0.15 ``McpCallable``). The
engine resolves such a name through ``McpTools`` (``Deps.mcp``): ``tool`` describes
it (from the server's cached tool list), ``call`` runs it and returns a
``ToolResult``. The SDK-backed implementation is ``runtime.mcp.client.McpConnector``;
the host (Django) supplies the server definitions and the env lookup.

Header and env values written ``${NAME}`` are resolved at call time from env value
``NAME`` through the thread's usual order (thread → agent → prompt → user →
instance), so secrets stay in the env store and the redactor knows them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal, Protocol

from pydantic import Field

from runtime.core.definition_errors import DefinitionError, check_name, parse
from runtime.core.env_refs import LITERAL_CREDENTIAL, PLACEHOLDER, literal_credential
from runtime.core.results import ToolResult
from runtime.core.spec import Definition

PREFIX = "mcp:"
Transport = Literal["http", "stdio"]
# ``oauth``: each person connects their own account (docs/mcp.md, "Servers that need OAuth").
Auth = Literal["none", "oauth"]
EnvLookup = Callable[[str], Awaitable[str | None]]
DEFAULT_TIMEOUT_MS = 30_000
MAX_TIMEOUT_MS = 600_000
# OpenAI and Anthropic both accept tool names of at most 64 of these characters.
_WIRE_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


class McpToolInfo(Definition):
    """One tool a server lists: name, description and the JSON schema of its arguments."""

    name: str
    description: str = ""
    input_schema: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )


class McpServerDefinition(Definition):
    """An MCP server connection (``mcp/<name>.json``)."""

    name: str
    transport: Transport = "http"
    url: str = ""
    command: str = ""
    args: list[str] = Field(default_factory=list)
    headers: dict[str, str] = Field(default_factory=dict)
    env: dict[str, str] = Field(default_factory=dict)
    timeout_ms: int = DEFAULT_TIMEOUT_MS
    allowed_tools: list[str] | None = None
    enabled: bool = True
    auth: Auth = "none"
    # With ``auth: oauth``: a client registered with the server's authorization server
    # beforehand (empty: dynamic registration); the secret is a ``${NAME}`` env value.
    oauth_client_id: str = ""
    oauth_client_secret: str = ""
    oauth_scope: str = ""


class McpServer(McpServerDefinition):
    """A definition plus what the host knows of it: the cached tool list."""

    tools: list[McpToolInfo] = Field(default_factory=list)

    def offered(self) -> list[McpToolInfo]:
        """The listed tools this server may offer (its allow-list, when it has one)."""
        if self.allowed_tools is None:
            return list(self.tools)
        allowed = set(self.allowed_tools)
        return [t for t in self.tools if t.name in allowed]

    def tool(self, name: str) -> McpToolInfo | None:
        return next((t for t in self.offered() if t.name == name), None)


# Asks the person one question of a server's mid-call ``elicitation/create`` and returns
# their answer, ``{"action": "accept" | "decline" | "cancel", "content": {...}}``; the
# question has the shape of one of ``runtime.mcp.client._questions``' (key, mode, message,
# schema, url).
McpAsk = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


class McpTools(Protocol):
    """What the engine needs to offer and run ``mcp:`` tools."""

    async def tool(
        self, server: str, name: str, env: EnvLookup | None = None
    ) -> McpToolInfo | None:
        """The tool's description, or ``None`` when the server or tool is unknown or disabled
        (``env`` resolves ``${NAME}`` when a never-listed server is listed on first use)."""
        ...

    async def call(
        self,
        server: str,
        name: str,
        args: dict[str, Any],
        *,
        call_id: str,
        env: EnvLookup,
        thread_id: str | None = None,
        resume: dict[str, Any] | None = None,
        ask: McpAsk | None = None,
    ) -> ToolResult:
        """Run the tool; server errors and timeouts come back as error results. ``thread_id``:
        whose person's OAuth token an ``auth: oauth`` server is called with. ``McpNeedsInput``
        when the server asks the person a question (2026-07-28); ``resume`` (its ``details``
        plus the person's ``answer``) then sends the answer back. A 2025-era server asks in
        the middle of the call instead: ``ask`` puts the question to the person while the
        call is held (without it, the question is refused in words)."""
        ...


class McpNeedsInput(Exception):
    """The server asked the person a question (2026-07-28 ``input_required``): ``details``
    holds the questions (key, message, requested schema) and the server's ``request_state``,
    all that answering needs, so the call can wait durably and resume in any process."""

    def __init__(self, details: dict[str, Any]) -> None:
        super().__init__("The MCP server asked the person for input.")
        self.details = details


class McpUnavailable(Exception):
    """The server cannot be reached or its connection was lost (plain words in ``str``)."""


class McpCallTimeout(Exception):
    """A call got no answer within the server's ``timeoutMs`` (it was cancelled)."""


NOBODY_TO_ASK = (
    "The MCP server asked the person a question in the middle of the call, but nobody can "
    "answer here (a sub-prompt, invoke_tool or a call outside a chat); it was not asked."
)


# --- names ------------------------------------------------------------------------------


def split_name(name: str) -> tuple[str, str] | None:
    """``mcp:<server>/<tool>`` → ``(server, tool)``; ``None`` when malformed."""
    if not name.startswith(PREFIX):
        return None
    server, sep, tool = name[len(PREFIX) :].partition("/")
    return (server, tool) if sep and server and tool else None


def wire_name(server: str, tool: str) -> str:
    """The name the model sees: providers allow only ``[A-Za-z0-9_-]{1,64}``."""
    return _WIRE_UNSAFE.sub("_", f"{server}__{tool}")[:64]


# --- validation -------------------------------------------------------------------------


def parse_server(data: Any) -> tuple[McpServerDefinition | None, list[DefinitionError]]:
    """Parse and check one ``mcp/<name>.json`` (the rules that need no database)."""
    if isinstance(data, dict) and check_name(data.get("name")) and "name" in data:
        _, errs = parse(McpServerDefinition, {**data, "name": "placeholder"})
        return None, check_name(data.get("name")) + [e for e in errs if e.path != "name"]
    obj, errs = parse(McpServerDefinition, data)
    if obj is None:
        return None, errs
    errs = validate_server(obj)
    return (None, errs) if errs else (obj, [])


def validate_server(d: McpServerDefinition) -> list[DefinitionError]:
    errs = check_name(d.name)
    if d.transport == "http":
        if not re.match(r"^https?://[^\s/]+", d.url):
            errs.append(DefinitionError("url", "An HTTP server needs a URL starting http(s)://."))
        if d.command or d.args:
            errs.append(DefinitionError("command", "Command and arguments are for stdio only."))
    else:
        if not d.command.strip():
            errs.append(DefinitionError("command", "A stdio server needs a command to run."))
        if d.url:
            errs.append(DefinitionError("url", "A URL is for HTTP servers only."))
        if d.headers:
            errs.append(DefinitionError("headers", "Headers are for HTTP servers only."))
    errs += _oauth_errors(d)
    if not 1 <= d.timeout_ms <= MAX_TIMEOUT_MS:
        errs.append(DefinitionError("timeoutMs", f"The timeout must be 1 to {MAX_TIMEOUT_MS} ms."))
    for field, values in (("headers", d.headers), ("env", d.env)):
        for key, value in values.items():
            if not key.strip() or any(c in key for c in "\r\n:="):
                errs.append(DefinitionError(f"{field}.{key}", "Not a valid name."))
            elif literal_credential(key, value):
                # The definition is shown in the studio and exported to files.
                errs.append(DefinitionError(f"{field}.{key}", LITERAL_CREDENTIAL))
    return errs


def _oauth_errors(d: McpServerDefinition) -> list[DefinitionError]:
    if d.auth != "oauth":
        if d.oauth_client_id or d.oauth_client_secret or d.oauth_scope:
            return [DefinitionError("auth", "The OAuth settings need auth: oauth.")]
        return []
    errs = []
    if d.transport != "http":
        errs.append(DefinitionError("auth", "OAuth is for HTTP servers only."))
    if any(k.lower() == "authorization" for k in d.headers):
        errs.append(
            DefinitionError(
                "headers.Authorization",
                "With auth: oauth the Authorization header carries the person's token; "
                "remove this header.",
            )
        )
    if d.oauth_client_secret and not d.oauth_client_id:
        errs.append(DefinitionError("oauthClientSecret", "A client secret needs a client id."))
    if d.oauth_client_secret and not PLACEHOLDER.fullmatch(d.oauth_client_secret.strip()):
        errs.append(
            DefinitionError(
                "oauthClientSecret", "Write the client secret as ${NAME}, a secret env value."
            )
        )
    return errs


def reference_errors(
    path: str, name: str, known: Mapping[str, set[str] | None]
) -> list[DefinitionError]:
    """Errors of a prompt's ``mcp:`` tool reference against the known servers' tools.

    ``known`` maps a server name to its tool names (``None``: the server's tools are
    not known yet, so no tool of it can be checked, and none is accepted).
    """
    parts = split_name(name)
    if parts is None:
        return [DefinitionError(path, f"'{name}' must be written mcp:<server>/<tool>.")]
    server, tool = parts
    if server not in known:
        return [DefinitionError(path, f"MCP server '{server}' does not exist.")]
    tools = known[server]
    if tools is None:
        return [
            DefinitionError(
                path,
                f"The tools of MCP server '{server}' are not known yet: test its connection "
                "(or give it allowedTools) first.",
            )
        ]
    if tool not in tools:
        listed = ", ".join(sorted(tools)) or "none"
        return [
            DefinitionError(path, f"MCP server '{server}' has no tool '{tool}' (it has: {listed}).")
        ]
    return []


# --- placeholders -----------------------------------------------------------------------


class McpConfigError(Exception):
    """A server's configuration cannot be used as it is (e.g. a missing env value)."""


async def resolve_values(values: Mapping[str, str], env: EnvLookup, what: str) -> dict[str, str]:
    """``values`` with each ``${NAME}`` replaced by env value ``NAME``."""
    out = {}
    for key, template in values.items():
        parts: list[str] = []
        last = 0
        for match in PLACEHOLDER.finditer(template):
            value = await env(match.group(1))
            if value is None:
                raise McpConfigError(
                    f"{what} '{key}' uses env value {match.group(1)}, which is not set."
                )
            parts += [template[last : match.start()], value]
            last = match.end()
        out[key] = "".join(parts) + template[last:]
    return out


# --- results ----------------------------------------------------------------------------


def result_from_content(
    content: list[dict[str, Any]], structured: Any = None, is_error: bool = False
) -> ToolResult:
    """A ``ToolResult`` from MCP result content: text joined, images and blobs as attachments."""
    texts: list[str] = []
    attachments: list[dict[str, Any]] = []
    for i, part in enumerate(content):
        kind = part.get("type")
        if kind == "text":
            texts.append(str(part.get("text", "")))
        elif kind in ("image", "audio"):
            mime = str(part.get("mimeType") or "application/octet-stream")
            attachments.append(_blob(f"{kind}-{i}", mime, part.get("data", "")))
        elif kind == "resource":
            _resource(part.get("resource") or {}, i, texts, attachments)
        elif kind == "resource_link":
            texts.append(f"Resource: {part.get('name') or ''} <{part.get('uri', '')}>".strip())
    if not texts and structured is not None:
        texts.append(json.dumps(structured, indent=2, default=str))
    text = "\n".join(texts)
    if is_error:
        return ToolResult("error", error=text or "The MCP tool reported an error.")
    return ToolResult("success", result=text, attachments=attachments)


def _resource(
    res: dict[str, Any], i: int, texts: list[str], attachments: list[dict[str, Any]]
) -> None:
    uri = str(res.get("uri", ""))
    if "text" in res:
        texts.append(f"Resource <{uri}>:\n{res['text']}")
        return
    name = uri.rstrip("/").rsplit("/", 1)[-1] or f"resource-{i}"
    mime = str(res.get("mimeType") or "application/octet-stream")
    attachments.append(_blob(name, mime, res.get("blob", "")))


def _blob(name: str, mime: str, data: Any) -> dict[str, Any]:
    ext = mime.split("/", 1)[-1].split("+", 1)[0] if "/" in mime else "bin"
    full = name if "." in name else f"{name}.{ext}"
    return {"name": full, "mimeType": mime, "data": str(data)}
