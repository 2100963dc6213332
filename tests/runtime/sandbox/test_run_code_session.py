"""``state.run_code`` from a tool in a scripted session, bridging thread state into the sandbox."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from runtime.providers.test_provider import TestScript
from runtime.tools.registry import define_tool
from tests.runtime.conftest import World, agent, prompt


class CodeArgs(BaseModel):
    source: str


async def test_spec_run_code_from_a_tool_through_thread_state(world: World) -> None:
    @define_tool("Run a script against the thread", CodeArgs)
    async def run_script(state: Any, args: CodeArgs) -> str:
        await state.set_value("budget", 7)
        run = state.run_code(
            args.source,
            {
                "imports": {"thread": {"getValue": state.get_value, "setValue": state.set_value}},
                "globals": {"threadId": state.thread_id},
                "report": lambda value: None,
            },
        )
        result = await run
        return json.dumps(
            {"status": result.status, "result": result.result, "reports": result.reports}
        )

    source = """
    import { getValue, setValue } from 'thread';
    export default async () => {
      const budget: number = await getValue('budget');
      await setValue('spent', budget * 2);
      report({ thread: threadId });
      return budget;
    };
    """
    world.register(run_script)
    world.define(prompt(tools=["run_script"]), agent())
    world.script("m", TestScript().add_tool_call("run_script", {"source": source}).add_text("done"))
    thread, _ = await world.chat("run it")

    tool_rows = [m for m in await world.messages(thread.id) if m.role == "tool"]
    assert len(tool_rows) == 1
    payload = json.loads(tool_rows[0].content or "")
    assert payload == {"status": "success", "result": 7, "reports": [{"thread": thread.id}]}
    state = await world.engine.thread_state(thread.id)
    assert await state.get_value("spent") == 14
