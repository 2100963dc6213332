"""Checkpointing: kill a session before every commit, resume it on a fresh engine, compare.

The final transcript must equal the uninterrupted run's; no scripted response
is consumed twice (each is stored once); a tool runs again only when the
session died between running it and storing its result.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel

from runtime.core.messages import Message
from runtime.core.spec import AgentDefinition, ToolConfig
from runtime.engine import Engine, NewMessage
from runtime.providers import ProviderRegistry
from runtime.providers.test_provider import TestProvider, TestScript
from runtime.store.protocol import Commit, CommitResult, LogQuery, MessageQuery, Store
from runtime.tools.registry import Registry, define_tool
from tests.runtime.conftest import Harness, prompt, side


def inbound_id(thread_id: str) -> str:
    """The id of a thread's inbound message: a retried send repeats it.

    Message ids are UUIDs, unique across threads (primary keys in the database).
    """
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"inbound:{thread_id}"))


class SimulatedCrash(Exception):
    """The worker died."""


class CrashingStore:
    """Delegates to a store; the ``crash_at``-th commit (of any thread) raises before writing."""

    def __init__(self, inner: Store, crash_at: int | None = None) -> None:
        self.inner, self.crash_at, self.commits = inner, crash_at, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def commit(self, thread_id: str, commit: Commit) -> CommitResult:
        self.commits += 1
        if self.commits == self.crash_at:
            raise SimulatedCrash(f"killed before commit {self.commits}")
        return await self.inner.commit(thread_id, commit)


class Args(BaseModel):
    n: int


class Scenario:
    """An agent, its script and tools, counting every tool run."""

    def __init__(
        self,
        harness: Harness,
        script: TestScript,
        definitions: list[Any],
        own_scripts: dict[str, TestScript] | None = None,
    ) -> None:
        self.harness, self.script = harness, script
        self.runs: Counter[str] = Counter()
        self.stored_at_crash: set[str] = set()
        self.providers = ProviderRegistry()
        self.provider = TestProvider(script)
        self.registry = Registry(self._tool())
        harness.define(*definitions)
        for model in {
            d.model for d in definitions if hasattr(d, "model") and isinstance(d.model, str)
        }:
            own = (own_scripts or {}).get(model)
            self.providers.override(model, TestProvider(own) if own else self.provider)
            from runtime.core.spec import ModelDefinition

            harness.define(ModelDefinition(name=model, provider="test", model="scripted"))

    def _tool(self) -> Any:
        @define_tool("Count", Args)
        async def count(state: Any, args: Args) -> str:
            self.runs[state.execution.tool_call_id] += 1
            return f"counted {args.n}"

        return count

    def engine(self, store: Any) -> Engine:
        return Engine(store, registry=self.registry, providers=self.providers, sleep=_no_wait)


async def _no_wait(_seconds: float) -> None:
    """The attempt ladder's backoff, skipped."""


def _normalized(messages: list[Message]) -> list[tuple[Any, ...]]:
    return [
        (
            m.role,
            m.content,
            m.tool_calls,
            m.tool_call_id,
            m.tool_status,
            m.status,
            m.depth,
            m.side,
            m.silent,
        )
        for m in messages
    ]


async def _transcript(store: Store, thread_id: str) -> list[tuple[Any, ...]]:
    page = await store.list_messages(
        thread_id, MessageQuery(limit=None, include_silent=True, max_depth=None)
    )
    return _normalized(page.messages)


async def _stored_results(store: Store, thread_id: str) -> set[str]:
    page = await store.list_messages(
        thread_id, MessageQuery(limit=None, include_silent=True, max_depth=None)
    )
    return {
        m.tool_call_id
        for m in page.messages
        if m.role == "tool" and m.status == "completed" and m.tool_call_id
    }


async def _run_with_crash(
    scenario: Scenario, store: Store, crash_at: int | None, start: Callable[[Engine], Any]
) -> tuple[str, bool]:
    crashing = CrashingStore(store, crash_at)
    engine = scenario.engine(crashing)
    thread = await engine.create_thread("agent")
    crashed = False
    try:
        await start(engine)(thread.id)
    except SimulatedCrash:
        crashed = True
    scenario.stored_at_crash = await _stored_results(store, thread.id)
    if crashed:  # the task is retried on another worker, with the same message
        await start(scenario.engine(store))(thread.id)
    return thread.id, crashed


async def _check_children(store: Store, thread_id: str) -> None:
    """Each agent-tool call used exactly one child thread, whose session ran once."""
    page = await store.list_messages(thread_id, MessageQuery(limit=None, include_silent=True))
    for row in page.messages:
        if row.role != "tool" or not row.subagent_id:
            continue
        assert (
            await store.get_value(thread_id, f"_runtime.child_thread.{row.tool_call_id}")
            == row.subagent_id
        )
        child = await _transcript(store, row.subagent_id)
        assert [(m[0], m[1]) for m in child if m[0] != "tool"] == [
            ("user", "count once"),
            ("assistant", None),
            ("assistant", "child answer"),
        ]


def _ten_step_script() -> TestScript:
    script = TestScript()
    for n in range(1, 9):
        script.add_tool_call("count", {"n": n}, id=f"call-{n}")
    script.add_tool_calls(
        [
            {"name": "count", "arguments": {"n": 90}, "id": "call-9a"},
            {"name": "count", "arguments": {"n": 91}, "id": "call-9b"},
        ]
    )
    return script.add_text("All counted.")


def _start_with(text: str) -> Callable[[Engine], Any]:
    return lambda engine: (
        lambda thread_id: engine.run_session(
            thread_id, message=NewMessage(text, id=inbound_id(thread_id))
        )
    )


async def _check_matrix(
    harness: Harness,
    scenario_factory: Callable[[Harness], Scenario],
    start: Callable[[Engine], Any],
    reason: str = "stop_on_response",
    extra_responses: int = 0,
) -> int:
    baseline = scenario_factory(harness)
    counting = CrashingStore(harness.store)
    thread_id, _ = await _run_with_crash(baseline, counting, None, start)
    expected = await _transcript(harness.store, thread_id)
    total_commits = counting.commits
    scripted = len(baseline.script.responses)
    responses = scripted + extra_responses  # other models' responses (fallbacks)
    for crash_at in range(1, total_commits + 1):
        scenario = scenario_factory(harness)
        thread_id, crashed = await _run_with_crash(scenario, harness.store, crash_at, start)
        assert crashed, f"commit {crash_at} was never reached"
        assert await _transcript(harness.store, thread_id) == expected, (
            f"crash before commit {crash_at}"
        )
        logs = await harness.store.list_logs(thread_id, LogQuery(limit=None, kind="llm"))
        consumed = [log for log in logs if log.is_complete and log.error_type != "interrupted"]
        assert len(consumed) == responses, (
            f"crash before commit {crash_at}: responses consumed twice"
        )
        assert set(scenario.runs) == set(baseline.runs)
        for call_id, runs in scenario.runs.items():
            if call_id in scenario.stored_at_crash:
                assert runs == 1, (
                    f"crash before commit {crash_at}: stored result of {call_id} recomputed"
                )
            else:
                assert runs <= 2, f"crash before commit {crash_at}: {call_id} ran {runs} times"
        assert {r.sequence for r in scenario.provider.requests} == set(range(scripted))
        progress = await harness.store.load_progress(thread_id)
        assert progress is not None and progress.finished and progress.stop_reason == reason
        await _check_children(harness.store, thread_id)
    return total_commits


async def test_resume_after_a_kill_before_every_commit_of_a_ten_step_run(harness: Harness) -> None:
    def factory(h: Harness) -> Scenario:
        return Scenario(
            h,
            _ten_step_script(),
            [prompt(tools=["count"]), AgentDefinition(name="agent", side_a=side("main"))],
        )

    commits = await _check_matrix(harness, factory, _start_with("count to nine"))
    # The start; per tool step the response (the step's opening rides along) and the close
    # with the last result; one more result for step 9's second call; the text step's
    # opening written on its own when its reply streams, then the finish with the reply.
    assert commits == 1 + 9 * 2 + 1 + 2


async def test_resume_with_parallel_tool_calls(harness: Harness) -> None:
    def factory(h: Harness) -> Scenario:
        script = (
            TestScript()
            .add_tool_calls(
                [{"name": "count", "arguments": {"n": i}, "id": f"p-{i}"} for i in range(3)]
            )
            .add_text("done")
        )
        return Scenario(
            h,
            script,
            [
                prompt(tools=["count"], parallel_tool_calls=True),
                AgentDefinition(name="agent", side_a=side("main")),
            ],
        )

    await _check_matrix(harness, factory, _start_with("go"))


async def test_resume_inside_a_subprompt(harness: Harness) -> None:
    def factory(h: Harness) -> Scenario:
        script = (
            TestScript()
            .add_tool_call("research", {"topic": "tea"}, id="r-1")
            .add_tool_calls(
                [
                    {"name": "count", "arguments": {"n": 1}, "id": "s-1"},
                    {"name": "count", "arguments": {"n": 2}, "id": "s-2"},
                ],
                content="sub says",
            )
            .add_text("parent done")
        )
        return Scenario(
            h,
            script,
            [
                prompt(tools=[ToolConfig(name="research", init_user_message_property="topic")]),
                prompt("research", tools=["count"]),
                AgentDefinition(name="agent", side_a=side("main")),
            ],
        )

    await _check_matrix(harness, factory, _start_with("research tea"))


async def test_resume_of_a_dual_ai_session(harness: Harness) -> None:
    def factory(h: Harness) -> Scenario:
        script = TestScript()
        for i in range(3):
            script.add_tool_call("count", {"n": i}, id=f"d-{i}").add_text(f"turn {i}")
        return Scenario(
            h,
            script,
            [
                prompt("pro", tools=["count"]),
                prompt("con", tools=["count"]),
                AgentDefinition(
                    name="agent",
                    type="dual_ai",
                    max_session_turns=3,
                    side_a=side("pro"),
                    side_b=side("con"),
                ),
            ],
        )

    commits = await _check_matrix(
        harness, factory, _start_with("debate"), reason="max_session_turns"
    )
    # The start; 2 per tool step (its opening rides with the response) and 2 per text step
    # (the opening is written on its own when the reply streams; the last close ends it).
    assert commits == 1 + 3 * 2 + 3 * 2


async def test_resume_while_an_agent_tool_runs_in_a_child_thread(harness: Harness) -> None:
    def factory(h: Harness) -> Scenario:
        script = (
            TestScript()
            .add_tool_call("helper", {"message": "count once"}, id="h-1")
            .add_text("parent done")
        )
        child = TestScript().add_tool_call("count", {"n": 1}, id="c-1").add_text("child answer")
        return Scenario(
            h,
            script,
            [
                prompt(tools=["helper"]),
                AgentDefinition(name="agent", side_a=side("main")),
                prompt("helper_prompt", model="mc", tools=["count"]),
                AgentDefinition(
                    name="helper",
                    expose_as_tool=True,
                    tool_description="Helps",
                    side_a=side("helper_prompt"),
                ),
            ],
            own_scripts={"mc": child},
        )

    commits = await _check_matrix(harness, factory, _start_with("ask the helper"))
    assert commits == 10  # 5 on the parent, 5 on the child thread: kills inside the child too


async def test_resume_along_the_attempt_ladder(harness: Harness) -> None:
    """Kills between a failed attempt, its retry and the fallback: a response whose log
    is stored is never requested again, and the transcript is the uninterrupted one."""

    def factory(h: Harness) -> Scenario:
        script = (
            TestScript()
            .add_error("busy", "overloaded", 529)
            .add_tool_call("count", {"n": 1}, id="l-1")
            .add_error("busy", "overloaded", 529)
            .add_error("busy", "overloaded", 529)
            .add_text("Done.")
        )
        backup = TestScript().add_tool_call("count", {"n": 2}, id="l-2")
        scenario = Scenario(
            h,
            script,
            [prompt(tools=["count"]), AgentDefinition(name="agent", side_a=side("main"))],
        )
        from runtime.core.spec import ModelDefinition

        h.define(
            ModelDefinition(name="backup", provider="test", model="scripted"),
            ModelDefinition(name="m", provider="test", model="scripted", fallbacks=["backup"]),
        )
        scenario.providers.override("backup", TestProvider(backup))
        return scenario

    commits = await _check_matrix(harness, factory, _start_with("count"), extra_responses=1)
    assert commits >= 12


async def test_message_resent_by_a_retried_task_is_not_stored_twice(harness: Harness) -> None:
    scenario = Scenario(
        harness,
        TestScript().add_tool_call("count", {"n": 1}, id="x").add_text("done"),
        [prompt(tools=["count"]), AgentDefinition(name="agent", side_a=side("main"))],
    )
    thread_id, crashed = await _run_with_crash(scenario, harness.store, 3, _start_with("hello"))
    assert crashed
    # The retried task runs with the same message again; it resumes instead of duplicating it.
    thread_id2 = thread_id
    result = await scenario.engine(harness.store).run_session(
        thread_id2, message=NewMessage("hello", id=inbound_id(thread_id2))
    )
    contents = [m[1] for m in await _transcript(harness.store, thread_id2)]
    assert contents.count("hello") == 1
    assert result.stop_reason == "stop_on_response"


async def test_orphaned_tool_call_never_breaks_the_next_request(harness: Harness) -> None:
    """A session that died after the model asked for a tool, and was never resumed."""
    scenario = Scenario(
        harness,
        TestScript().add_tool_call("count", {"n": 1}, id="lost").add_text("fresh start"),
        [prompt(tools=["count"]), AgentDefinition(name="agent", side_a=side("main"))],
    )
    # Commits: the start, the response asking for the tool, then the tool's result: it
    # dies before that one.
    crashing = CrashingStore(harness.store, crash_at=3)
    engine = scenario.engine(crashing)
    thread = await engine.create_thread("agent")
    with pytest.raises(SimulatedCrash):
        await engine.run_session(thread.id, message=NewMessage("first"))
    # The operator abandons the session; a new one starts on the same thread.
    progress = await harness.store.load_progress(thread.id)
    assert progress is not None
    progress.finished, progress.stop_reason = True, "step_error"
    await harness.store.commit(thread.id, Commit(progress=progress))
    result = await scenario.engine(harness.store).run_session(
        thread.id, message=NewMessage("second")
    )
    assert result.final_text == "fresh start"
    sent = scenario.provider.requests[-1].messages
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "user"]
    assert sent[2]["tool_call_id"] == "lost" and sent[2]["content"].startswith("Error:")


async def test_a_session_stopped_by_the_user_while_dead_ends_on_resume(harness: Harness) -> None:
    scenario = Scenario(
        harness,
        TestScript().add_text("never sent"),
        [prompt(), AgentDefinition(name="agent", side_a=side("main"))],
    )
    crashing = CrashingStore(harness.store, crash_at=3)  # dies while the request is in flight
    engine = scenario.engine(crashing)
    thread = await engine.create_thread("agent")
    with pytest.raises(SimulatedCrash):
        await engine.run_session(thread.id, message=NewMessage("hi", id=inbound_id(thread.id)))
    harness.press_stop(thread.id)
    result = await scenario.engine(harness.store).run_session(
        thread.id, message=NewMessage("hi", id=inbound_id(thread.id))
    )
    assert result.stop_reason == "aborted_by_user"
    rows = await _transcript(harness.store, thread.id)
    assert [(r[0], r[5]) for r in rows] == [("user", "completed"), ("assistant", "failed")]
    logs = await harness.store.list_logs(thread.id, LogQuery(limit=None, kind="llm"))
    assert [(log.is_complete, log.error_type) for log in logs] == [(True, "interrupted")]
