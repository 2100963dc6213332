"""The MCP server form: builds the definition and applies the same rules as import."""

from __future__ import annotations

from typing import Any

from django import forms

from agents_app.forms.fields import CommaSeparatedField, KeyValueLinesField
from agents_app.models import McpServer
from agents_app.services.definitions.mcp_servers import server_errors
from runtime.definitions.validation import parse
from runtime.mcp.servers import McpServerDefinition

_FIELDS = {
    "timeoutMs": "timeout_ms",
    "allowedTools": "allowed_tools",
    "oauthClientId": "oauth_client_id",
    "oauthClientSecret": "oauth_client_secret",
    "oauthScope": "oauth_scope",
}


class ArgsField(forms.CharField):
    """Command arguments, one per line (so an argument may contain spaces)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        kwargs.setdefault("widget", forms.Textarea(attrs={"rows": 2}))
        super().__init__(**kwargs)

    def prepare_value(self, value: Any) -> Any:
        return "\n".join(value) if isinstance(value, list) else value

    def to_python(self, value: Any) -> list[str]:  # type: ignore[override]
        if isinstance(value, list):
            return value
        return [
            line.strip() for line in (super().to_python(value) or "").splitlines() if line.strip()
        ]


class McpServerForm(forms.ModelForm):
    args = ArgsField(label="Arguments", help_text="stdio: one argument per line.")
    headers = KeyValueLinesField(
        label="Headers",
        help_text="HTTP: one Name=value per line. Write credentials as ${NAME}, e.g. "
        "Authorization=Bearer ${GITHUB_TOKEN}, and keep NAME as a secret env value.",
    )
    env = KeyValueLinesField(
        label="Environment",
        help_text="stdio: one NAME=value per line for the command; ${NAME} reads an env value.",
    )
    allowed_tools = CommaSeparatedField(
        label="Allowed tools",
        help_text="Only these tools may be offered to prompts. Empty: every tool the server lists.",
    )

    # Set by the admin: whose save this is (stdio servers need staff).
    actor: Any = None

    class Meta:
        model = McpServer
        fields = [
            "name",
            "enabled",
            "transport",
            "url",
            "headers",
            "command",
            "args",
            "env",
            "timeout_ms",
            "allowed_tools",
            "auth",
            "oauth_client_id",
            "oauth_client_secret",
            "oauth_scope",
        ]
        labels = {"url": "URL", "timeout_ms": "Timeout (ms)"}
        help_texts = {
            "name": "Prompts list its tools as mcp:NAME/TOOL. Letters, digits, '_', '-', '.'.",
            "url": "HTTP: the server's streamable HTTP endpoint, e.g. https://example.com/mcp.",
            "command": "stdio: the program to run on the worker (only when MCP_ALLOW_STDIO is on).",
            "timeout_ms": "How long one tool call may take before the model gets a timeout error.",
            "auth": "OAuth: each person connects their own account once, and tool calls use "
            "the thread owner's token.",
            "oauth_client_id": "OAuth: a client registered with the server's authorization "
            "server. Empty: registered automatically (dynamic registration).",
            "oauth_client_secret": "OAuth: that client's secret as ${NAME}, an instance env "
            "value (never the secret itself).",
            "oauth_scope": "OAuth: the scopes to ask for, space separated. Empty: what the "
            "server lists.",
        }

    def clean(self) -> dict[str, Any]:
        cd = super().clean() or {}
        if self.errors:
            return cd
        data = {
            "name": cd.get("name") or "",
            "transport": cd.get("transport") or "http",
            "url": cd.get("url") or "",
            "command": cd.get("command") or "",
            "args": cd.get("args") or [],
            "headers": cd.get("headers") or {},
            "env": cd.get("env") or {},
            "timeoutMs": cd.get("timeout_ms"),
            "allowedTools": cd.get("allowed_tools") or None,
            "enabled": bool(cd.get("enabled")),
            "auth": cd.get("auth") or "none",
            "oauthClientId": cd.get("oauth_client_id") or "",
            "oauthClientSecret": cd.get("oauth_client_secret") or "",
            "oauthScope": cd.get("oauth_scope") or "",
        }
        definition, errors = parse(McpServerDefinition, data)
        if definition is not None:
            errors = server_errors(definition, self.actor)
        for error in errors:
            head = error.path.split(".", 1)[0]
            field = _FIELDS.get(head, head)
            self.add_error(field if field in self.fields else None, error.message)
        cd["allowed_tools"] = cd.get("allowed_tools") or None
        cd["headers"], cd["env"] = cd.get("headers") or {}, cd.get("env") or {}
        return cd
