"""MCP server connections: save (with the stdio policy), refresh the tool list, and serve the
engine's ``McpServerSource`` (docs/mcp.md).

A stdio server runs a command on the worker, so it is an operator's feature: refused
unless ``MCP_ALLOW_STDIO`` is on, and then only staff may save one (the admin; the
import command is run by an operator). Header and env values stay ``${NAME}``
templates here; they are resolved when a connection opens.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from asgiref.sync import async_to_sync, sync_to_async
from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from agents_app.base.errors import Invalid
from agents_app.base.permissions import may_read_instance_env
from agents_app.models import EnvValue, McpServer
from agents_app.services.access.mcp_tokens import access_token_for
from runtime.core.env_refs import references
from runtime.definitions.validation import DefinitionError
from runtime.mcp.client import McpUnavailable, discover_tools
from runtime.mcp.servers import (
    EnvLookup,
    McpConfigError,
    McpServerDefinition,
    McpToolInfo,
    validate_server,
)
from runtime.mcp.servers import McpServer as RuntimeServer

STDIO_OFF = (
    "stdio MCP servers run a command on the worker and are turned off on this instance "
    "(set MCP_ALLOW_STDIO=true to allow them)."
)
STDIO_STAFF = "Only superusers may configure stdio MCP servers: they run a command on the worker."


def server_definition(row: McpServer) -> McpServerDefinition:
    return McpServerDefinition(
        name=row.name,
        transport=row.transport,  # type: ignore[arg-type]
        url=row.url,
        command=row.command,
        args=list(row.args or []),
        headers=dict(row.headers or {}),
        env=dict(row.env or {}),
        timeout_ms=row.timeout_ms,
        allowed_tools=list(row.allowed_tools) if row.allowed_tools is not None else None,
        enabled=row.enabled,
        auth=row.auth,  # type: ignore[arg-type]
        oauth_client_id=row.oauth_client_id,
        oauth_client_secret=row.oauth_client_secret,
        oauth_scope=row.oauth_scope,
    )


def server_runtime(row: McpServer) -> RuntimeServer:
    """The definition with its cached tools (what the engine offers)."""
    tools = [McpToolInfo.model_validate(t) for t in row.tools or []]
    return RuntimeServer(**server_definition(row).model_dump(), tools=tools)


def server_errors(d: McpServerDefinition, actor: Any = None) -> list[DefinitionError]:
    """Every reason not to save ``d``; ``actor`` is the studio user (None: the operator's import)."""
    errs = validate_server(d)
    if d.transport == "stdio":
        if not settings.MCP_ALLOW_STDIO:
            errs.append(DefinitionError("transport", STDIO_OFF))
        elif actor is not None and not getattr(actor, "is_superuser", False):
            errs.append(DefinitionError("transport", STDIO_STAFF))
    if actor is not None and not may_read_instance_env(actor):
        errs += _unreadable_secrets(d)
    return errs


def _unreadable_secrets(d: McpServerDefinition) -> list[DefinitionError]:
    """Headers and env name env values that threads resolve down to the instance's: whoever
    points them somewhere (a new server, a changed address or command) could send the
    instance's secret where they choose, so that takes the right to read instance env
    values, as testing the server does. Edits that leave where they go alone are allowed."""
    stored = McpServer.objects.filter(name=d.name).first()
    if stored is not None and (
        (stored.transport, stored.url, stored.command, list(stored.args or []))
        == (d.transport, d.url, d.command, list(d.args))
        and dict(stored.headers or {}) == dict(d.headers)
        and dict(stored.env or {}) == dict(d.env)
    ):
        return []
    named = {
        (field, key): set(references(value))
        for field, values in (("headers", d.headers), ("env", d.env))
        for key, value in values.items()
    }
    every = set().union(*named.values()) if named else set()
    instance = set(
        EnvValue.objects.filter(scope="instance", key__in=every).values_list("key", flat=True)
    )
    return [
        DefinitionError(
            field,
            f"{'Header' if field == 'headers' else 'Env'} {key} uses {name}, an instance env "
            "value you may not read: this save would send it to the server given here. Ask "
            "someone who may read instance env values to save this server, or use an env "
            "value of your own.",
        )
        for (field, key), names in named.items()
        for name in sorted(names & instance)
    ]


def server_from_definition(d: McpServerDefinition) -> McpServer:
    """Upsert the row; a changed connection keeps its cached tools until the next refresh.
    A server given with its tools (``RuntimeServer``, listed by the import) caches them."""
    listed: dict[str, Any] = {}
    if isinstance(d, RuntimeServer) and d.tools:
        listed = {
            "tools": _tool_rows(d.tools),
            "tools_refreshed_at": timezone.now(),
            "last_error": "",
        }
    row, _ = McpServer.objects.update_or_create(
        name=d.name,
        defaults={
            **listed,
            "transport": d.transport,
            "url": d.url,
            "command": d.command,
            "args": list(d.args),
            "headers": dict(d.headers),
            "env": dict(d.env),
            "timeout_ms": d.timeout_ms,
            "allowed_tools": d.allowed_tools,
            "enabled": d.enabled,
            "auth": d.auth,
            "oauth_client_id": d.oauth_client_id,
            "oauth_client_secret": d.oauth_client_secret,
            "oauth_scope": d.oauth_scope,
        },
    )
    return row


def _tool_rows(tools: Iterable[McpToolInfo]) -> list[dict[str, Any]]:
    return [t.dump() | {"name": t.name} for t in tools]


def mcp_server_save(*, definition: McpServerDefinition, actor: Any) -> McpServer:
    errs = server_errors(definition, actor)
    if errs:
        raise Invalid("; ".join(str(e) for e in errs))
    return server_from_definition(definition)


# --- tool discovery -------------------------------------------------------------------------


def studio_env_lookup(user: Any) -> EnvLookup:
    """``${NAME}`` outside a thread (the studio's test, on ``user``'s behalf): the user's own
    value, else the instance's when ``user`` may read instance env values; a value they may
    not read is refused in words, never sent (``user=None``: the operator's import)."""

    def find(name: str) -> str | None:
        owner = Q(scope="user", user_id=getattr(user, "pk", None)) if user else Q(pk__in=[])
        rows = {
            r.scope: r for r in EnvValue.objects.filter(Q(key=name) & (owner | Q(scope="instance")))
        }
        if "user" in rows:
            return rows["user"].value
        row = rows.get("instance")
        if row is None:
            return None
        if user is not None and not may_read_instance_env(user):
            raise McpConfigError(
                f"${{{name}}} is an instance env value, which you may not read: it was not "
                "sent. Set your own env value of that name, or ask someone who may read "
                "instance env values to test this server."
            )
        return row.value

    async def lookup(name: str) -> str | None:
        return await sync_to_async(find)(name)

    return lookup


def studio_bearer(server: McpServer, user: Any) -> str | None:
    """The studio user's own OAuth token for an ``auth: oauth`` server (their test lists the
    tools with it); ``McpUnavailable`` asks them to connect first."""
    if server.auth != "oauth":
        return None
    try:
        return access_token_for(server, user)
    except McpConfigError as exc:
        raise McpUnavailable(str(exc)) from None


def mcp_server_refresh(*, server: McpServer, user: Any) -> list[McpToolInfo]:
    """Connect, list the tools and cache them; ``Invalid`` says in plain words what failed."""
    definition = server_definition(server)
    try:
        bearer = studio_bearer(server, user)
        tools = async_to_sync(discover_tools)(definition, studio_env_lookup(user), bearer)
    except McpUnavailable as exc:
        server.last_error = f"Could not list the tools of '{server.name}': {str(exc).rstrip('.')}."
        server.save(update_fields=["last_error", "updated_at"])
        raise Invalid(server.last_error) from None
    server.tools = _tool_rows(tools)
    server.tools_refreshed_at = timezone.now()
    server.last_error = ""
    server.save(update_fields=["tools", "tools_refreshed_at", "last_error", "updated_at"])
    return tools


def mcp_server_probe(*, server: McpServer, user: Any) -> list[McpToolInfo]:
    """Connect with ``server`` as given (the studio form's unsaved edits) and list its tools,
    storing nothing: "Test connection" tests what the person typed, not the saved row."""
    try:
        bearer = studio_bearer(server, user)
        return async_to_sync(discover_tools)(
            server_definition(server), studio_env_lookup(user), bearer
        )
    except McpUnavailable as exc:
        raise Invalid(
            f"Could not list the tools of '{server.name}': {str(exc).rstrip('.')}."
        ) from None


# --- for validation and the engine ------------------------------------------------------------


def known_tools(
    row_tools: list[dict[str, Any]] | None, allowed: list[str] | None
) -> set[str] | None:
    """The tool names a prompt may reference (``None``: not known until a refresh)."""
    if row_tools:
        names = {str(t.get("name")) for t in row_tools}
        return names & set(allowed) if allowed is not None else names
    return set(allowed) if allowed is not None else None


def mcp_catalog(extra: Iterable[McpServerDefinition] = ()) -> dict[str, set[str] | None]:
    """Server name → the tool names a prompt may list, for ``Catalog.mcp_tools``."""
    rows = {r.name: r for r in McpServer.objects.all()}
    known = {name: known_tools(r.tools, r.allowed_tools) for name, r in rows.items()}
    for d in extra:
        row = rows.get(d.name)
        tools = row.tools if row else None
        if isinstance(d, RuntimeServer) and d.tools:
            tools = _tool_rows(d.tools)
        known[d.name] = known_tools(tools, d.allowed_tools)
    return known


def list_for_import(d: McpServerDefinition) -> tuple[McpServerDefinition, str | None]:
    """An imported server with its tool list (``RuntimeServer``), listed now with the
    instance's env values, so prompts of the same import can name its tools and the engine
    finds them (issue #38 item 9); or the definition unchanged and why it could not be listed
    (the engine then lists it on first use)."""
    if not d.enabled or (d.transport == "stdio" and not settings.MCP_ALLOW_STDIO):
        return d, None
    try:
        tools = async_to_sync(discover_tools)(d, studio_env_lookup(None))
    except McpUnavailable as exc:
        return d, f"Could not list the tools of MCP server '{d.name}': {str(exc).rstrip('.')}."
    return RuntimeServer(**d.model_dump(), tools=tools), None


def tool_choices() -> list[tuple[str, str]]:
    """``(mcp:<server>/<tool>, description)`` of every enabled server's offered tools."""
    out = []
    for row in McpServer.objects.filter(enabled=True):
        for tool in server_runtime(row).offered():
            out.append((f"mcp:{row.name}/{tool.name}", tool.description))
    return out


class DjangoMcpServers:
    """``runtime.mcp.client.McpServerSource`` over the ``McpServer`` table."""

    async def mcp_server(self, name: str) -> RuntimeServer | None:
        return await sync_to_async(_runtime_by_name)(name)

    async def remember_tools(self, name: str, tools: list[McpToolInfo]) -> None:
        await sync_to_async(_remember_tools)(name, tools)


def _remember_tools(name: str, tools: list[McpToolInfo]) -> None:
    McpServer.objects.filter(name=name).update(
        tools=_tool_rows(tools), tools_refreshed_at=timezone.now(), last_error=""
    )


def _runtime_by_name(name: str) -> RuntimeServer | None:
    row = McpServer.objects.filter(name=name).first()
    return server_runtime(row) if row is not None else None
