"""An ``auth: oauth`` MCP server with a configured OAuth client (``oauthClientId``,
``oauthClientSecret`` as ``${NAME}``) and a scope (``oauthScope``): the connect flow uses that
client instead of dynamic registration, the secret from the instance env value, and asks for
that scope. A real local HTTP server publishes the protected-resource and authorization
server metadata (and offers no registration, so only the configured client can work)."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from agents_app.models import EnvValue, McpServer
from agents_app.services.access import mcp_connect


class _Metadata:
    def __init__(self) -> None:
        self.posts: list[str] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _json(self, status: int, body: dict[str, Any], extra: dict[str, str]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                for name, value in extra.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:  # the probe of /mcp: 401 naming the metadata
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                outer.posts.append(self.path)
                named = f'Bearer resource_metadata="{outer.base}/.well-known/oauth-protected-resource/mcp"'
                self._json(401, {"error": "unauthorized"}, {"WWW-Authenticate": named})

            def do_GET(self) -> None:
                if self.path == "/.well-known/oauth-protected-resource/mcp":
                    body = {"resource": f"{outer.base}/mcp", "authorization_servers": [outer.base]}
                elif self.path.startswith("/.well-known/oauth-authorization-server"):
                    body = {
                        "issuer": outer.base,
                        "authorization_endpoint": f"{outer.base}/authorize",
                        "token_endpoint": f"{outer.base}/token",
                        "code_challenge_methods_supported": ["S256"],
                    }
                else:
                    self._json(404, {"error": "not found"}, {})
                    return
                self._json(200, body, {})

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def metadata() -> Iterator[_Metadata]:
    served = _Metadata()
    yield served
    served.close()


@pytest.mark.django_db
def test_a_configured_client_and_scope_are_what_the_connect_flow_uses(
    metadata: _Metadata,
) -> None:
    EnvValue.objects.create(scope="instance", key="TRACKER_CLIENT_SECRET", value="cs-PLANTED-77")
    server = McpServer.objects.create(
        name="tracker",
        transport="http",
        url=f"{metadata.base}/mcp",
        auth="oauth",
        oauth_client_id="studio-client",
        oauth_client_secret="${TRACKER_CLIENT_SECRET}",
        oauth_scope="issues:read",
    )
    url, pending = mcp_connect.begin(server, "https://studio.example/mcp-servers/callback")
    query = parse_qs(urlsplit(url).query)
    assert url.startswith(f"{metadata.base}/authorize?")
    assert query["client_id"] == ["studio-client"]  # the configured client, no registration
    assert query["scope"] == ["issues:read"]
    assert query["code_challenge_method"] == ["S256"]
    assert query["resource"] == [f"{metadata.base}/mcp"]
    assert pending["client_id"] == "studio-client"
    assert pending["client_secret"] == "cs-PLANTED-77"  # from the instance env value
    assert "cs-PLANTED-77" not in url
    assert metadata.posts == ["/mcp"]  # one probe; nothing was registered

    # Without a configured client, a server that offers no registration is refused in words.
    McpServer.objects.filter(pk=server.pk).update(oauth_client_id="", oauth_client_secret="")
    server.refresh_from_db()
    with pytest.raises(mcp_connect.OAuthFailed, match="offers no dynamic registration"):
        mcp_connect.begin(server, "https://studio.example/mcp-servers/callback")
