"""The agent's Connect page: where each door of this agent is and a snippet that calls it
(docs/studio.md "Connect", docs/api.md for the doors themselves).

Snippets never hold a secret: the key is the shell variable ``$STUDIO_API_KEY`` (the
reader's own key, made under API keys). Every value that comes from the request or the
agent is quoted for the language it lands in (``shlex.quote`` for the shell,
``json.dumps`` for JSON and Python string literals), so nothing in a host name or an agent
name can turn a pasted snippet into something else; the template escapes it for HTML.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import quote

KEY_VARIABLE = "STUDIO_API_KEY"
_AUTH = f'-H "Authorization: Bearer ${KEY_VARIABLE}"'
_JSON = "-H 'Content-Type: application/json'"


@dataclass(frozen=True)
class Door:
    """One protocol's way in: its URLs (label, value) and a snippet in ``language``."""

    slug: str
    title: str
    intro: str
    urls: list[tuple[str, str]]
    snippet: str
    language: str
    notes: list[str] = field(default_factory=list)


def _curl(method: str, url: str, body: Mapping[str, object] | None = None, *extra: str) -> str:
    """``url`` is one shell word already (``shlex.quote``d, or built of quoted parts)."""
    lines = [f"curl -sS -X {method} {url}", _AUTH, *extra]
    if body is not None:
        lines += [_JSON, f"--data {shlex.quote(json.dumps(body))}"]
    return " \\\n  ".join(lines)


def _thread_url(api: str, tail: str) -> str:
    # The thread id is the one expansion the reader wants; the rest stays single-quoted.
    return shlex.quote(f"{api}/threads/") + '"$THREAD"' + shlex.quote(tail)


def agent_doors(*, base_url: str, agent: str, exposed_as_tool: bool) -> list[Door]:
    """The five doors of ``agent`` on the instance at ``base_url`` (no trailing slash)."""
    name = quote(agent, safe="")
    api = f"{base_url}/api"
    a2a = f"{base_url}/a2a/{name}"
    card = f"{a2a}/.well-known/agent-card.json"
    ag_ui = f"{base_url}/ag-ui/{name}"
    mcp = f"{base_url}/mcp"
    question = "Hello!"
    thread_api = "\n".join(
        [
            "# Create a thread, post a message, then read the answer.",
            "THREAD=$("
            + _curl("POST", shlex.quote(f"{api}/threads"), {"agent_id": agent})
            + " \\\n  | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"threadId\"])')",
            _curl(
                "POST",
                _thread_url(api, "/messages"),
                {"role": "user", "content": question},
            ),
            _curl("GET", _thread_url(api, "/messages?order=asc")),
        ]
    )
    openai_snippet = "\n".join(
        [
            "import os",
            "from openai import OpenAI",
            "",
            f"client = OpenAI(base_url={json.dumps(f'{base_url}/v1')}, "
            f'api_key=os.environ["{KEY_VARIABLE}"])',
            "answer = client.chat.completions.create(",
            f"    model={json.dumps(agent)},",
            f'    messages=[{{"role": "user", "content": {json.dumps(question)}}}],',
            ")",
            "print(answer.choices[0].message.content)",
        ]
    )
    a2a_body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "message/send",
        "params": {
            "message": {
                "kind": "message",
                "messageId": "m-1",
                "role": "user",
                "parts": [{"kind": "text", "text": question}],
            }
        },
    }
    ag_ui_body = {
        "threadId": "my-conversation",
        "runId": "run-1",
        "messages": [{"id": "u-1", "role": "user", "content": question}],
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
    }
    mcp_config = {
        "mcpServers": {
            "studio": {
                "type": "http",
                "url": mcp,
                "headers": {"Authorization": f"Bearer ${{{KEY_VARIABLE}}}"},
            }
        }
    }
    mcp_notes = (
        []
        if exposed_as_tool
        else [
            "This agent is not exposed as a tool, so /mcp does not list it: tick "
            "“Expose as a tool” under “As a tool” and save."
        ]
    )
    return [
        Door(
            "thread-api",
            "Thread API",
            "Our own API, which the reference's clients speak (docs/api.md, Routes).",
            [("API base", api), ("Agent id", agent)],
            thread_api,
            "shell",
        ),
        Door(
            "openai",
            "OpenAI-compatible (/v1)",
            "Any OpenAI client library: the agent is the model.",
            [("Base URL", f"{base_url}/v1"), ("Model", agent)],
            openai_snippet,
            "python",
        ),
        Door(
            "a2a",
            "A2A (/a2a)",
            "Other agents (the a2a-sdk and compatible clients) find it by its Agent Card.",
            [("Agent Card", card), ("JSON-RPC endpoint", a2a)],
            _curl("POST", shlex.quote(a2a), a2a_body),
            "shell",
        ),
        Door(
            "ag-ui",
            "AG-UI (/ag-ui)",
            "AG-UI front ends (CopilotKit, @ag-ui/client's HttpAgent) post RunAgentInput here.",
            [("Run URL", ag_ui)],
            _curl("POST", shlex.quote(ag_ui), ag_ui_body, "-H 'Accept: text/event-stream'"),
            "shell",
        ),
        Door(
            "mcp",
            "MCP (/mcp)",
            "MCP clients (Claude Desktop, Cursor, VS Code…) list the agent as a tool "
            f"named {agent}. A client that signs in with OAuth needs only the URL (you "
            "consent once); others send an API key, as below.",
            [("MCP URL", mcp), ("Tool", agent)],
            json.dumps(mcp_config, indent=2),
            "json",
            mcp_notes,
        ),
    ]
