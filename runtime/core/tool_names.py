"""``validateToolName``: the names a model may be offered as tools.

OpenAI, Anthropic, Google and OpenRouter all accept ``[A-Za-z0-9_-]{1,64}`` (Google
also allows ``.``, the others do not), so that is the rule for every name offered:
code tools, prompts and agents listed as tools, stop and end-session tools. A name
that breaks it is refused where it is written (tool registration, definition save),
never rewritten silently: a mapped name would differ from the one the author, the
logs and the stored tool calls use. MCP tools are the exception, mapped by
``runtime.mcp.servers.wire_name`` because the remote server chose the name, not the author.
"""

from __future__ import annotations

import re

TOOL_NAME_MAX = 64
_TOOL_NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
TOOL_NAME_RULE = (
    "tool names offered to a model may use only letters, digits, '_' and '-', "
    f"and are at most {TOOL_NAME_MAX} characters"
)


def validate_tool_name(name: str) -> str | None:
    """``None`` when ``name`` can be offered to a model as a tool, else the reason it cannot."""
    if _TOOL_NAME_RE.match(name):
        return None
    if not name:
        return "A tool name is required."
    return f"'{name}' cannot be offered to a model as a tool: {TOOL_NAME_RULE}."


def is_valid_tool_name(name: str) -> bool:
    return validate_tool_name(name) is None
