"""Reference ``ThreadState`` calls this runtime answers with a sentence instead of running.

Spec 0.2.0 (builder 0.41) added ``runAgent`` and ``callClient``/``callClientStream``/
``runtimeStreams`` to the state tool code gets. They do not map onto our engine, so
``ThreadState.run_agent`` and ``ThreadState.call_client``/``call_client_stream`` exist and
raise :class:`NotOurs` with what to use instead (a tool that raises gives the model the
sentence as its error result). docs/api.md "Where we differ" says the same.
"""

from __future__ import annotations

# A thread runs one agent (``ThreadRecord.agent_name``; a session has no agent of its own),
# so "a flow of another agent on this thread" has no place to live. A handoff (the thread
# changes agent for good) or a subagent (a child thread) covers what runAgent is used for.
RUN_AGENT_TEXT = (
    "state.run_agent('{agent}') is not supported: a thread here runs one agent, so a session "
    "of another agent cannot be queued on it. Hand the thread over with a handoff tool entry, "
    "or start the agent as a subagent (its own thread) with subagent_create."
)

# Client tools park the session durably (no worker waits), which tool code cannot do midway
# through its own run; the prompt's tool entry is where a call is marked to run in the client.
CALL_CLIENT_TEXT = (
    "state.{method}() is not supported: tool code cannot forward work to the client here. "
    "Mark the tool entry in the prompt with client: true and the connected client runs the "
    "call (docs/api.md, 'The client bridge'); byte streams to the client are not offered."
)


class NotOurs(NotImplementedError):
    """A reference call this runtime refuses; the message says what to use instead."""


def run_agent_refusal(agent_name: str) -> NotOurs:
    return NotOurs(RUN_AGENT_TEXT.format(agent=agent_name))


def call_client_refusal(method: str) -> NotOurs:
    return NotOurs(CALL_CLIENT_TEXT.format(method=method))
