"""Starting the test MCP server (``server.py``) as a real child process."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from runtime.mcp.servers import McpServerDefinition

ROOT = Path(__file__).resolve().parents[2]
MODULE = "tests.mcp_servers.server"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class HttpMcpServer:
    """The test server over streamable HTTP on 127.0.0.1 (stop and start it again at will);
    ``era="2025"``: it speaks only the 2025 revisions (a stateful ``initialize`` session)."""

    def __init__(self, env: dict[str, str] | None = None, era: str | None = None) -> None:
        self.port = free_port()
        self.env = env or {}
        self.era = era
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def start(self) -> HttpMcpServer:
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                MODULE,
                "http",
                str(self.port),
                *([self.era] if self.era else []),
            ],
            cwd=ROOT,
            env={**os.environ, **self.env},
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            assert self.process.poll() is None, "the MCP test server exited"
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return self
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("the MCP test server did not start")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)

    def definition(self, name: str = "web", **options: Any) -> McpServerDefinition:
        return McpServerDefinition(name=name, transport="http", url=self.url, **options)


def stdio_definition(name: str = "local", **options: Any) -> McpServerDefinition:
    """The test server over stdio (the client starts it)."""
    options.setdefault("env", {})
    options["env"].setdefault("PYTHONPATH", str(ROOT))
    return McpServerDefinition(
        name=name,
        transport="stdio",
        command=sys.executable,
        args=["-m", MODULE, "stdio"],
        **options,
    )
