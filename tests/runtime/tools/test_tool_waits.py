"""Tool calls that wait (``requiresApproval`` / ``client``): park, decide, resume, expire, stop."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from runtime.core import waits
from runtime.core.spec import ToolConfig
from runtime.providers.test_provider import TestScript
from runtime.tools.registry import define_tool
from tests.runtime.conftest import World, agent, prompt

RUNS: list[str] = []


class PathArgs(BaseModel):
    path: str


@define_tool("Delete a file (dangerous)", PathArgs)
async def delete_everything(state: Any, args: PathArgs) -> str:
    RUNS.append("delete_everything")
    return "deleted"


def _world(world: World, script: TestScript, **entry: Any) -> None:
    RUNS.clear()
    world.register(delete_everything)
    tool = ToolConfig(name="delete_everything", **entry)
    world.define(prompt(tools=[tool]), agent())
    world.script("m", script)


def _script() -> TestScript:
    return (
        TestScript().add_tool_call("delete_everything", {"path": "/"}, id="call_1").add_text("done")
    )


async def _row(world: World, thread_id: str) -> Any:
    return next(m for m in await world.messages(thread_id) if m.role == "tool")


async def test_spec_approval_parks_the_session_with_the_pending_call(world: World) -> None:
    _world(world, _script(), requires_approval=True)
    thread, result = await world.chat("clean up")
    assert result.stop_reason == "awaiting_tool"
    assert RUNS == []
    row = await _row(world, thread.id)
    assert row.status == "pending" and waits.waiting(row)
    wait = waits.wait_of(row)
    assert wait is not None and wait["kind"] == "approval" and wait["arguments"] == {"path": "/"}
    progress = await world.store.load_progress(thread.id)
    assert progress is not None and not progress.finished and progress.open_step is not None
    frames = world.sink.events(thread.id, "tool_call_waiting")
    assert frames and frames[0]["data"]["name"] == "delete_everything"
    # resuming before a decision changes nothing: the call still waits, the tool never ran
    again = await world.run(thread.id)
    assert again.stop_reason == "awaiting_tool" and RUNS == []
    assert len(world.requests()) == 1


async def test_spec_approved_call_runs_and_the_session_resumes(world: World) -> None:
    _world(world, _script(), requires_approval=True)
    thread, _ = await world.chat("clean up")
    decided = await world.store.decide_tool_call(thread.id, "call_1", waits.approval(True))
    assert decided is not None
    result = await world.run(thread.id)
    assert result.stop_reason == "stop_on_response" and result.final_text == "done"
    row = await _row(world, thread.id)
    assert RUNS == ["delete_everything"]
    assert row.status == "completed" and row.tool_status == "success" and row.content == "deleted"
    assert world.requests()[1].messages[-1]["content"] == "deleted"


async def test_spec_rejected_call_gives_the_model_the_reason(world: World) -> None:
    _world(world, _script(), requires_approval=True)
    thread, _ = await world.chat("clean up")
    await world.store.decide_tool_call(thread.id, "call_1", waits.approval(False, "too risky"))
    await world.run(thread.id)
    assert RUNS == []
    row = await _row(world, thread.id)
    assert row.tool_status == "error" and "too risky" in (row.content or "")
    assert "too risky" in world.requests()[1].messages[-1]["content"]


async def test_spec_a_decision_is_taken_once(world: World) -> None:
    _world(world, _script(), requires_approval=True)
    thread, _ = await world.chat("clean up")
    first = await world.store.decide_tool_call(thread.id, "call_1", waits.approval(True))
    second = await world.store.decide_tool_call(thread.id, "call_1", waits.approval(False, "no"))
    assert first is not None and second is None
    assert (
        await world.store.decide_tool_call(thread.id, "call_unknown", waits.approval(True)) is None
    )


async def test_spec_expired_call_gives_the_model_a_timeout_result(world: World) -> None:
    _world(world, _script(), requires_approval=True, wait_timeout_seconds=60)
    thread, _ = await world.chat("clean up")
    row = await _row(world, thread.id)
    wait = waits.wait_of(row)
    assert wait is not None and wait["expires_at"] - wait["requested_at"] == 60_000
    await world.store.decide_tool_call(thread.id, "call_1", waits.expired())
    await world.run(thread.id)
    row = await _row(world, thread.id)
    assert RUNS == [] and row.tool_status == "error" and "timed out" in (row.content or "")


async def test_spec_client_tool_result_is_what_the_model_reads(world: World) -> None:
    _world(world, _script(), client=True)
    thread, result = await world.chat("clean up")
    assert result.stop_reason == "awaiting_tool"
    assert waits.wait_of(await _row(world, thread.id))["kind"] == "client"  # type: ignore[index]
    await world.store.decide_tool_call(thread.id, "call_1", waits.client_result(True, {"n": 3}))
    await world.run(thread.id)
    row = await _row(world, thread.id)
    assert RUNS == [] and row.tool_status == "success" and row.content == '{"n": 3}'


async def test_spec_stop_while_waiting_answers_execution_stopped_by_user(world: World) -> None:
    _world(world, _script(), requires_approval=True)
    thread, _ = await world.chat("clean up")
    world.harness.press_stop(thread.id)
    result = await world.run(thread.id)
    assert result.stop_reason == "aborted_by_user"
    row = await _row(world, thread.id)
    assert row.status == "completed" and row.content == "Execution stopped by user"
    assert RUNS == [] and len(world.requests()) == 1


# --- validation ------------------------------------------------------------------------------


def _errors(*entries: dict[str, Any]) -> list[str]:
    from runtime.core.spec import PromptDefinition
    from runtime.definitions.validation import Catalog, validate_prompt

    catalog = Catalog(models={"m"}, prompts={"helper"}, agents={"child"}, tools={"wipe"})
    main = PromptDefinition.model_validate(
        {"name": "main", "model": "m", "prompt": "hi", "tools": list(entries)}
    )
    return [str(e) for e in validate_prompt(main, catalog)]


def test_spec_requires_approval_is_refused_where_it_cannot_work() -> None:
    assert _errors({"name": "wipe", "requiresApproval": True, "waitTimeoutSeconds": 30}) == []
    [on_agent] = _errors({"name": "child", "requiresApproval": True})
    assert "requiresApproval works only on tools; 'child' is an agent" in on_agent
    [on_prompt] = _errors({"name": "helper", "client": True})
    assert "'helper' is a prompt" in on_prompt
    [both] = _errors({"name": "wipe", "requiresApproval": True, "client": True})
    assert "not both" in both
    [ignored] = _errors({"name": "wipe", "waitTimeoutSeconds": 30})
    assert "applies only with requiresApproval or client" in ignored
    [negative] = _errors({"name": "wipe", "client": True, "waitTimeoutSeconds": 0})
    assert "positive" in negative


@define_tool("Count things", PathArgs)
async def count_things(state: Any, args: PathArgs) -> str:
    RUNS.append("count_things")
    return "3"


async def test_parallel_calls_run_the_plain_one_and_park_on_the_waiting_one(world: World) -> None:
    RUNS.clear()
    world.register(delete_everything, count_things)
    tools = [ToolConfig(name="delete_everything", requires_approval=True), "count_things"]
    world.define(prompt(tools=tools, parallel_tool_calls=True), agent())
    script = TestScript().add_tool_calls(
        [
            {"id": "call_b", "name": "delete_everything", "arguments": {"path": "/"}},
            {"id": "call_a", "name": "count_things", "arguments": {"path": "/"}},
        ]
    )
    world.script("m", script.add_text("done"))
    thread, result = await world.chat("go")
    assert result.stop_reason == "awaiting_tool" and RUNS == ["count_things"]
    await world.store.decide_tool_call(thread.id, "call_b", waits.approval(True))
    result = await world.run(thread.id)
    assert result.final_text == "done"
    assert RUNS == ["count_things", "delete_everything"]  # nothing ran twice


async def test_a_waiting_tool_inside_a_sub_prompt_is_refused_not_run(world: World) -> None:
    RUNS.clear()
    world.register(delete_everything)
    world.define(
        prompt("main", tools=["research"]),
        agent("agent", "main"),
        prompt(
            "research",
            model="mr",
            text="You research.",
            tool_description="Research",
            tools=[ToolConfig(name="delete_everything", requires_approval=True)],
        ),
    )
    world.script(
        "mr",
        TestScript().add_tool_call("delete_everything", {"path": "/"}).add_text("sub done"),
    )
    world.script("m", TestScript().add_tool_call("research", {}).add_text("parent done"))
    thread, result = await world.chat("go")
    assert result.final_text == "parent done" and RUNS == []
    deeper = [m for m in await world.messages(thread.id) if m.role == "tool" and m.depth == 1]
    assert deeper and "works only in the agent's own prompt" in (deeper[0].content or "")
