"""Retention on real processes: Celery beat sends the task every second, a worker applies the
studio's policy, and a session running meanwhile on another worker is neither deleted nor
held up. Every wait is a bounded poll that fails with a sentence."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.integration.stack import Stack, wait_until
from tests.integration.test_live_sessions import Watch, new_thread, post

pytestmark = pytest.mark.integration


SLOW_REPLY_MS = 15_000


def _slow_agent(root: Path) -> Path:
    """A scripted agent whose reply takes SLOW_REPLY_MS: a session to keep running."""
    from agents_app.services.definitions.files import definition_json
    from runtime.core.spec import AgentDefinition, ModelDefinition, PromptDefinition, SideConfig

    model = ModelDefinition(
        name="napper-model",
        provider="test",
        model="scripted",
        script=[{"content": "finally awake", "delayMs": SLOW_REPLY_MS}],
    )
    prompt = PromptDefinition(name="napper-prompt", model=model.name, prompt="Nap.")
    agent = AgentDefinition(name="napper", side_a=SideConfig(prompt=prompt.name))
    for kind, defn in (("models", model), ("prompts", prompt), ("agents", agent)):
        (root / kind).mkdir(parents=True, exist_ok=True)
        (root / kind / f"{defn.name}.json").write_text(definition_json(defn))
    return root


@pytest.fixture(scope="module")
def retention_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    tmp = tmp_path_factory.mktemp("retention")
    stack = Stack(tmp, setup=[["import_definitions", str(_slow_agent(tmp / "defs"))]])
    # The server settings keep everything: only the studio's policy row asks for deletion.
    stack.env.update(
        {"STUDIO_RETENTION_INTERVAL_SECONDS": "1", "STUDIO_RETENTION_THREAD_DAYS": "0"}
    )
    stack.start()
    try:
        yield stack
    finally:
        stack.stop()


def _execute(stack: Stack, statement: str, *args: Any) -> None:
    with psycopg.connect(stack.dsn) as conn:
        conn.execute(statement, args)


def _age(stack: Stack, thread_id: str) -> None:
    _execute(
        stack,
        "UPDATE agents_app_thread SET last_activity_at = now() - interval '100 days' WHERE id = %s",
        thread_id,
    )


def _exists(stack: Stack, thread_id: str) -> bool:
    return bool(stack.sql("SELECT 1 FROM agents_app_thread WHERE id = %s", thread_id))


def _summary(stack: Stack) -> str:
    rows = stack.sql("SELECT last_run_summary FROM agents_app_retentionpolicy")
    return str(rows[0][0]) if rows else ""


def test_beat_applies_the_studio_policy_and_never_touches_a_running_session(
    retention_stack: Stack,
) -> None:
    stack = retention_stack
    workers: list[Any] = [stack.worker("sessions"), stack.worker("janitor", beat=True)]
    try:
        # Beat runs retention every second; with the default policy it keeps everything.
        wait_until(lambda: "kept 0 old threads" in _summary(stack), "a first retention run")
        idle = new_thread(stack, "greeter")
        with Watch(stack, f"/api/threads/{idle}/stream") as stream:
            post(stack, idle, "hi")
            stream.until(lambda f: f["type"] == "stopped", "the idle thread's session to end")
        busy = new_thread(stack, "napper")
        with Watch(stack, f"/api/threads/{busy}/stream") as stream:
            post(stack, busy, "wake up")
            stream.until(lambda f: f["type"] == "step_started", "the busy thread's step")
            _age(stack, idle)
            _age(stack, busy)
            # What saving the studio's retention page writes (tested in test_retention_admin).
            _execute(stack, "UPDATE agents_app_retentionpolicy SET thread_days = 30")
            wait_until(lambda: not _exists(stack, idle), "retention to delete the idle thread")
            wait_until(
                lambda: "kept 1 old threads that are in use" in _summary(stack),
                "a run that kept the busy thread",
            )
            assert _exists(stack, busy)
            reply = stream.until(
                lambda f: (
                    f["type"] == "message_data"
                    and f["data"]["role"] == "assistant"
                    and f["data"]["status"] == "completed"
                ),
                "the running session's reply",
                timeout=SLOW_REPLY_MS / 1000 + 30,
            )
        assert reply["data"]["content"] == "finally awake"
        assert _exists(stack, busy)
        assert not stack.sql("SELECT 1 FROM agents_app_message WHERE thread_id = %s", idle)
        stored = stack.sql(
            "SELECT content FROM agents_app_message WHERE thread_id = %s AND role = 'assistant'",
            busy,
        )
        assert stored == [("finally awake",)]
    finally:
        for process in workers:
            process.stop()
