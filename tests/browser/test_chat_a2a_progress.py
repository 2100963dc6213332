"""Issue #57: while an ``a2a:`` tool runs, the chat shows the remote agent's streamed status
updates live (``tool_call_progress`` frames) on that call's line, each replacing the last,
settled when the result arrives; the remote's text is drawn as text, never as markup; an agent
that hides tools shows none of it.

The remote A2A agent is a small A2A server in this process (JSON-RPC ``message/stream`` over
server-sent events on a real socket) that sends each status update only when the test says:
the site's Celery worker asks it through the real A2A client, and the browser reads the frames
from the site's socket. Holding each update until the page has shown the last is what lets the
test see every one of them without a single sleep. The site's own ``/a2a`` door as the remote
(tests/agents_app/api/test_a2a_client.py) streams only ``working`` with no text, then the
answer: too little to show replacement or hostile text.
"""

from __future__ import annotations

import json
import queue
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.browser.support import Site, chat_login, shot

expect.set_options(timeout=20_000)

PAYLOAD = '<img src=x onerror="window.__pwned=1">'
ANSWER = "Your flight to Lisbon is booked."
# Every <img> ever added to the transcript (or with the payload's src), and whether a script
# of the remote's ran.
WATCH = """
window.__imgs = 0;
new MutationObserver((changes) => {
  for (const c of changes) for (const n of c.addedNodes) {
    if (n.nodeType !== 1) continue;
    const imgs = n.tagName === 'IMG' ? [n] : [...n.querySelectorAll('img')];
    window.__imgs += imgs.filter((i) => i.getAttribute('src') === 'x' || i.closest('#transcript')).length;
  }
}).observe(document, { childList: true, subtree: true });
"""
# Every frame the page's socket receives, recorded before the page's own handler reads it.
RECORD_FRAMES = """
window.__frames = [];
const NativeSocket = window.WebSocket;
window.WebSocket = class extends NativeSocket {
  constructor(...args) {
    super(...args);
    this.addEventListener('message', (e) => window.__frames.push(String(e.data)));
  }
};
"""
# Resolves once the page has drawn what it had been given (render.js draws on the next frame).
RENDERED = "new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))"


class Remote:
    """A scripted remote A2A agent: each ``update`` is sent on the open stream when called."""

    def __init__(self) -> None:
        self.updates: queue.Queue[dict[str, Any] | None] = queue.Queue()
        remote = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                return

            def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
                card = {
                    "name": "travel_agent",
                    "description": "Books trips.",
                    "url": f"{remote.url}/rpc",
                    "capabilities": {"streaming": True},
                    "skills": [],
                }
                body = json.dumps(card).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:  # noqa: N802
                request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                task = {"kind": "task", "id": "t1", "contextId": "c1"}
                self._send(request["id"], {**task, "status": {"state": "submitted"}})
                while True:
                    try:
                        result = remote.updates.get(timeout=120)
                    except queue.Empty:
                        return
                    if result is None:
                        return
                    self._send(request["id"], result)
                    if result.get("final"):
                        return

            def _send(self, request_id: Any, result: dict[str, Any]) -> None:
                event = {"jsonrpc": "2.0", "id": request_id, "result": result}
                self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                self.wfile.flush()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def update(self, state: str, text: str, *, final: bool = False) -> None:
        message = {"kind": "message", "role": "agent", "messageId": f"m-{text[:8]}"}
        status = {"state": state, "message": {**message, "parts": [{"kind": "text", "text": text}]}}
        self.updates.put(
            {"kind": "status-update", "taskId": "t1", "contextId": "c1", "status": status}
            | {"final": final}
        )

    def close(self) -> None:
        self.updates.put(None)
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def remote(site: Site) -> Iterator[Remote]:
    served = Remote()
    site.python(DEFINE.replace("REMOTE_URL", served.url))
    yield served
    served.close()


@pytest.fixture
def travel(remote: Remote) -> Iterator[Remote]:
    remote.updates = queue.Queue()
    yield remote
    remote.updates.put(None)  # a call the test left open ends here


DEFINE = f"""
from agents_app.services.definitions.saves import save_definitions
from runtime.core.a2a_agents import A2aAgentDefinition
from runtime.core.spec import AgentDefinition, ModelDefinition, PromptDefinition, SideConfig
remote = A2aAgentDefinition(name="travel_agent", url="REMOTE_URL", description="Books trips.")
script = [
    {{"toolCalls": [{{"name": "travel_agent", "arguments": {{"message": "Book Lisbon"}}}}]}},
    {{"content": {ANSWER!r}}},
]
model = ModelDefinition(name="trip-model", provider="test", model="scripted", script=script)
prompt = PromptDefinition(name="trip-prompt", model="trip-model", prompt="Plan trips.",
                          tools=["a2a:travel_agent"])
agents = [
    AgentDefinition(name=name, title="Trip planner", tool_activity=mode,
                    side_a=SideConfig(prompt="trip-prompt"))
    for name, mode in (("trip_planner", "summary"), ("trip_planner_full", "full"),
                       ("trip_planner_quiet", "hidden"))
]
save_definitions([("a2a", remote), ("model", model), ("prompt", prompt)]
                 + [(a.name, a) for a in agents], strict_code_names=False)
"""


def _ask(page: Page, site: Site, agent: str, *, signed_in: bool = False) -> None:
    page.add_init_script(WATCH)
    if signed_in:
        page.goto(f"{site.url}/chat/?agent={agent}")
    else:
        chat_login(page, site, "alice", then=f"/chat/?agent={agent}")
    box = page.get_by_label("Message")
    box.fill("Find me a flight to Lisbon")
    box.press("Enter")
    page.wait_for_url("**/chat/t/**")


def _answers(page: Page) -> Any:
    return page.locator("article.msg-assistant").filter(has_text=ANSWER)


def test_a_remote_agents_updates_replace_each_other_on_the_calls_line_as_text(
    page: Page, site: Site, travel: Remote
) -> None:
    _ask(page, site, "trip_planner")
    line = page.locator(".tool-line")
    expect(line).to_have_text("Using travel agent…")

    travel.update("working", "Looking up flights")
    expect(line).to_have_text("Asking travel agent… working: Looking up flights")
    expect(_answers(page)).to_have_count(0)

    # The remote's text is hostile: it is shown as the characters it is, never as markup.
    travel.update("working", PAYLOAD)
    expect(line).to_have_text(f"Asking travel agent… working: {PAYLOAD}")
    expect(line).to_have_count(1)
    assert page.evaluate("window.__imgs") == 0
    assert page.evaluate("window.__pwned") is None
    expect(page.locator("#transcript img")).to_have_count(0)

    # The server keeps no progress: a reload mid-call shows the call running, and the next
    # update live again.
    page.reload()
    expect(line).to_have_text("Using travel agent…")
    # The thread's own flag says a session runs: the page says it works and offers Stop,
    # though the newest row (the call, no result yet) says nothing of it.
    expect(page.locator("#state")).to_have_attribute("data-state", "thinking")
    expect(page.locator("#stop-button")).to_be_visible()
    travel.update("input-required", "Which day?\n  Morning   or evening?")
    expect(line).to_have_text(
        "Asking travel agent… needs more input: Which day? Morning or evening?"
    )
    travel.update("working", "Holding seat 14C")
    expect(line).to_have_text("Asking travel agent… working: Holding seat 14C")
    page.set_viewport_size({"width": 1280, "height": 700})
    shot(page, "chat-a2a-progress-summary")

    # The result settles the line; the answer follows.
    travel.update("completed", "TP123 on Friday", final=True)
    expect(_answers(page)).to_be_visible()
    expect(line).to_have_text("Used travel agent")
    expect(page.locator(".tool-progress")).to_have_count(0)
    assert page.evaluate("window.__imgs") == 0 and page.evaluate("window.__pwned") is None


def test_the_full_block_shows_the_update_and_an_agent_hiding_tools_shows_none(
    page: Page, site: Site, travel: Remote
) -> None:
    _ask(page, site, "trip_planner_full")
    tool = page.locator("details.tool").filter(has_text="travel_agent")
    expect(tool).to_be_visible()
    travel.update("working", "Looking up flights")
    expect(tool.locator("summary .tool-progress")).to_have_text("working: Looking up flights")
    expect(tool.locator("summary .badge")).to_have_text("running…")
    shot(page, "chat-a2a-progress-full")
    travel.update("completed", "TP123 on Friday", final=True)
    expect(_answers(page)).to_be_visible()
    expect(tool.locator("summary .badge")).to_have_text("done")
    expect(page.locator(".tool-progress")).to_have_count(0)

    # An agent that hides tools: the frame reaches the page, and the page shows none of it.
    quiet = page.context.new_page()
    quiet.add_init_script(RECORD_FRAMES)
    _ask(quiet, site, "trip_planner_quiet", signed_in=True)
    travel.update("working", "Quietly looking up flights")
    quiet.wait_for_function("() => window.__frames.some((f) => f.includes('Quietly looking'))")
    assert quiet.evaluate(RENDERED)
    expect(quiet.locator("#transcript")).not_to_contain_text("Quietly")
    expect(quiet.locator("#transcript")).not_to_contain_text("travel")
    expect(quiet.locator("#state")).not_to_contain_text("Quietly")
    expect(quiet.locator(".tool-line, details.tool, .tool-progress")).to_have_count(0)
    travel.update("completed", "TP123 on Friday", final=True)
    expect(_answers(quiet)).to_be_visible()
    expect(quiet.locator(".tool-line, details.tool")).to_have_count(0)
    quiet.close()


# The site's own /a2a door as the remote: a second agent on the same site, whose reply streams
# for seconds, asked with alice's key from a secret env value.
LONG_REPLY = " ".join(f"Word{i}" for i in range(150))
OWN_DOOR = f"""
from agents_app.models import EnvValue
from agents_app.services.definitions.saves import save_definitions
from runtime.core.a2a_agents import A2aAgentDefinition
from runtime.core.spec import AgentDefinition, ModelDefinition, PromptDefinition, SideConfig
row = EnvValue.objects.filter(scope="instance", key="ORACLE_KEY").first()
row = row or EnvValue(scope="instance", key="ORACLE_KEY", value_type="secret")
row.value = "ALICE_KEY"
row.save()
oracle_model = ModelDefinition(name="oracle-model", provider="test", model="scripted",
                               script=[{{"content": {LONG_REPLY!r}}}] * 5,
                               streaming={{"chunkSize": 6, "chunkDelayMs": 60}})
oracle_prompt = PromptDefinition(name="oracle-prompt", model="oracle-model", prompt="Answer.")
oracle = AgentDefinition(name="oracle", title="Oracle", side_a=SideConfig(prompt="oracle-prompt"))
remote = A2aAgentDefinition(name="oracle", url="SITE_URL/a2a/oracle",
                            headers={{"Authorization": "Bearer ${{ORACLE_KEY}}"}})
script = [
    {{"toolCalls": [{{"name": "oracle", "arguments": {{"message": "Tell me everything"}}}}]}},
    {{"content": "The oracle has spoken."}},
]
model = ModelDefinition(name="asker-model", provider="test", model="scripted", script=script)
prompt = PromptDefinition(name="asker-prompt", model="asker-model", prompt="Ask the oracle.",
                          tools=["a2a:oracle"])
asker = AgentDefinition(name="oracle_asker", title="Oracle asker", tool_activity="summary",
                        side_a=SideConfig(prompt="asker-prompt"))
save_definitions([("om", oracle_model), ("op", oracle_prompt), ("oa", oracle)],
                 strict_code_names=False)
save_definitions([("a2a", remote), ("m", model), ("p", prompt), ("a", asker)],
                 strict_code_names=False)
"""


def test_an_agent_on_the_sites_own_a2a_door_shows_it_working_before_the_answer(
    page: Page, site: Site
) -> None:
    define = OWN_DOOR.replace("SITE_URL", site.url).replace("ALICE_KEY", site.api_key("alice"))
    site.python(define)
    _ask(page, site, "oracle_asker")
    line = page.locator(".tool-line")
    expect(line).to_have_text("Asking oracle… working")
    answer = page.locator("article.msg-assistant").filter(has_text="The oracle has spoken.")
    expect(answer).to_have_count(0)
    shot(page, "chat-a2a-progress-own-door")
    expect(answer).to_be_visible()
    expect(line).to_have_text("Used oracle")
    expect(page.locator(".tool-progress")).to_have_count(0)
