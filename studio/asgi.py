"""ASGI entry point: HTTP through Django (``/mcp`` through the MCP SDK, ``/v1`` through the
OpenAI-compatible API's own app, ``/a2a`` through the A2A door's, ``/ag-ui`` through the
AG-UI door's), WebSockets through Channels.

WebSockets authenticate with a ticket, an API key or the session cookie
(``agents_app.sockets.consumers.websocket_auth``). ``LoopCapture`` tells the in-process
session executor (embedded mode) which event loop serves the app.
"""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings")
# Requests share a few threads (agents_app/web/request_threads.py), more than the view gate
# lets run at once; a pool shares the connections between them.
os.environ.setdefault("DB_POOL", "true")

from agents_app.web.request_threads import asgi_application  # noqa: E402

django_asgi_app = asgi_application()

from studio import daphne_limits, relay_hot_path  # noqa: E402
from studio.event_loop import check_server_loop  # noqa: E402

daphne_limits.install()  # Daphne's own 400/414 answers in JSON too
relay_hot_path.install()  # less library work per relayed frame (docs/architecture.md)
check_server_loop()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from agents_app.api.a2a_v1 import with_a2a  # noqa: E402
from agents_app.api.ag_ui_v1 import with_ag_ui  # noqa: E402
from agents_app.api.openai_v1 import with_openai  # noqa: E402
from agents_app.mcp_endpoint.mount import with_mcp  # noqa: E402
from agents_app.orchestration.executor import LoopCapture  # noqa: E402
from agents_app.sockets.consumers import websocket_auth  # noqa: E402
from agents_app.sockets.routing import websocket_urlpatterns  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": LoopCapture(with_mcp(with_openai(with_a2a(with_ag_ui(django_asgi_app))))),
        "websocket": LoopCapture(websocket_auth(URLRouter(websocket_urlpatterns))),
    }
)

from agents_app.orchestration.warm_up import warm_web  # noqa: E402
from studio.process_tuning import settle  # noqa: E402

warm_web()  # what the first request would import, before the server accepts any
settle()  # everything imported above lives as long as the server
