"""``/ag-ui``: every agent as an AG-UI agent, for AG-UI front ends (CopilotKit, the
``@ag-ui/client`` ``HttpAgent``; docs/api.md, "AG-UI").

``POST /ag-ui/<agent>`` takes AG-UI's ``RunAgentInput`` and answers with the run's events
as server-sent events. An ASGI app in front of Django beside ``/v1`` and ``/a2a``, for their
reasons (a run waits for the agent's session on the server's loop, not in a view's
thread), and as thin: the body is read by ``services/doors/ag_ui_runs.py``, the run opened
by ``orchestration/ag_ui_runs.py`` as a turn of ``/v1``'s orchestration (publishing,
audience, thread rights, usage limits and budgets are the thread API's), posted and
followed with the doors' shared wait (``door_support``), and told as events by
``ag_ui_stream.RunEvents``.

A refusal before the run starts is an HTTP error with a JSON body (``{"error": {message,
type, param, code}}``, ``/v1``'s shape): 400 bad input (the field in ``param``), 401, 404
(an agent the caller may not use, as if absent), 409 busy thread, 413, 429 limits and
budgets. Once the stream started, a failure is ``RUN_ERROR``. A client that goes away
stops the session it started (an AG-UI front end's stop button aborts its request).
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from channels.layers import get_channel_layer

from agents_app.api import ag_ui_wire as wire
from agents_app.api.ag_ui_stream import RunEvents
from agents_app.api.door_support import (
    BodyTooLarge,
    Caller,
    ClientGone,
    Frames,
    Receive,
    Send,
    authenticate,
    db,
    follow,
    host_allowed,
    mounted,
    post_turn,
    read_body,
    request_headers,
    send_json,
    stop_or_log,
    wait_for_disconnect,
)
from agents_app.base.overload import overload_reason, retry_after
from agents_app.base.storable_text import describe_unstorable, find_unstorable
from agents_app.models import Agent
from agents_app.orchestration.ag_ui_runs import Resumed, run_open, run_resume, run_thread
from agents_app.orchestration.openai_turns import Turn
from agents_app.selectors import agents_for
from agents_app.services.doors.ag_ui_interrupts import run_interrupts
from agents_app.services.doors.ag_ui_runs import RunInput, run_input
from agents_app.services.doors.openai_compat import THREAD_HEADER, OpenAIError, turn_usage
from agents_app.services.env.redaction import thread_redactor

logger = logging.getLogger("agents_app.api.ag_ui_v1")

PREFIX = "/ag-ui"
AGENT_NAME_MAX = 128  # Agent.name


async def app(scope: dict[str, Any], receive: Receive, send: Send) -> None:
    """Serves every ``/ag-ui`` path; each answer is JSON or an event stream, never HTML."""
    try:
        await _serve(scope, receive, send)
    except OpenAIError as exc:
        await _error(send, exc)
    except ClientGone:
        pass
    except Exception as exc:
        reason = overload_reason(exc)
        if reason is not None:
            logger.warning("503 for %s %s: %s", scope.get("method"), scope.get("path"), exc)
            error = OpenAIError(
                503, f"{reason}; retry in {retry_after()} seconds.", type="server_error"
            )
            error.retry_after = int(retry_after())
            await _error(send, error)
            return
        logger.exception("Unhandled error in %s %s", scope.get("method"), scope.get("path"))
        await _error(send, OpenAIError(500, "Internal error", type="server_error"))


async def _serve(scope: dict[str, Any], receive: Receive, send: Send) -> None:
    headers = request_headers(scope)
    if not host_allowed(headers):
        raise OpenAIError(400, "Invalid Host header (not in ALLOWED_HOSTS)")
    name = scope["path"].removeprefix(PREFIX).strip("/")
    caller = await db(authenticate)(headers.get("authorization", ""))
    if caller is None:
        raise OpenAIError(
            401,
            "Send Authorization: Bearer <API key> (create one in the studio, or with POST "
            "/api/api-keys).",
            code="invalid_api_key",
        )
    agent = await db(_agent)(caller.user, name) if name and "/" not in name else None
    if agent is None:
        raise OpenAIError(
            404,
            f"No agent '{name[:200]}' here, or you may not use it (POST {PREFIX}/<agent>).",
            code="agent_not_found",
        )
    if scope.get("method") != "POST":
        raise OpenAIError(
            405, f"Method not allowed ({scope.get('method')}): use POST", code="method_not_allowed"
        )
    run = run_input(_parsed(await _read(receive)))
    if run.resume:
        await _resume(run, caller, agent, receive, send)
    else:
        await _run(run, caller, agent, receive, send)


def _agent(user: Any, name: str) -> Agent | None:
    if len(name) > AGENT_NAME_MAX or find_unstorable(name) is not None:
        return None  # no agent has such a name: a 404, never a database error
    return agents_for(user).filter(name=name).first()


async def _read(receive: Receive) -> bytes:
    try:
        return await read_body(receive)
    except BodyTooLarge as exc:
        raise OpenAIError(413, exc.message, code="request_too_large") from None


def _parsed(data: bytes) -> Any:
    try:
        body = json.loads(data)
        found = find_unstorable(body)
    except (ValueError, RecursionError):
        raise OpenAIError(400, "The body is not valid JSON (expected a RunAgentInput).") from None
    if found is not None:
        raise OpenAIError(400, describe_unstorable(found), param=found[0] or None)
    return body


# --- a run ------------------------------------------------------------------------------------


async def _run(run: RunInput, caller: Caller, agent: Agent, receive: Receive, send: Send) -> None:
    opened = await db(run_open)(
        user=caller.user, api_key_id=caller.api_key_id, agent=agent, run=run
    )
    frames = Frames(get_channel_layer())
    try:
        await frames.join(opened.thread_id)
        turn = await post_turn(opened, caller)
    except BaseException:
        await frames.leave()
        raise
    gone = asyncio.ensure_future(wait_for_disconnect(receive))
    try:
        await _streamed(run, turn, frames, gone, send)
    except ClientGone:
        await stop_or_log(turn, caller)
    except asyncio.CancelledError:
        await asyncio.shield(stop_or_log(turn, caller))
        raise
    finally:
        gone.cancel()
        await frames.leave()


async def _resume(
    run: RunInput, caller: Caller, agent: Agent, receive: Receive, send: Send
) -> None:
    """A run that answers the last one's interrupts: the same session, followed on."""
    frames = Frames(get_channel_layer())
    try:
        # Joined before the answers resume the session: no frame of it is missed.
        resumed_id = await db(run_thread)(caller.user, agent, run.thread_id)
        if resumed_id is not None:
            await frames.join(resumed_id)
        resumed = await db(run_resume)(user=caller.user, agent=agent, run=run)
        if resumed_id != resumed.turn.thread_id:
            await frames.join(resumed.turn.thread_id)
    except BaseException:
        await frames.leave()
        raise
    gone = asyncio.ensure_future(wait_for_disconnect(receive))
    try:
        await _streamed(run, resumed.turn, frames, gone, send, resumed)
    except ClientGone:
        await stop_or_log(resumed.turn, caller)
    except asyncio.CancelledError:
        await asyncio.shield(stop_or_log(resumed.turn, caller))
        raise
    finally:
        gone.cancel()
        await frames.leave()


async def _streamed(
    run: RunInput,
    turn: Turn,
    frames: Frames,
    gone: asyncio.Future[None],
    send: Send,
    resumed: Resumed | None = None,
) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                (b"content-type", b"text/event-stream; charset=utf-8"),
                (b"cache-control", b"no-cache"),
                (b"x-accel-buffering", b"no"),  # nginx: pass each event on at once
                (THREAD_HEADER.lower().encode(), turn.thread_id.encode()),
            ],
        }
    )

    async def write(event: dict[str, Any]) -> None:
        await send({"type": "http.response.body", "body": wire.sse(event), "more_body": True})

    async def keep_alive() -> None:
        await send({"type": "http.response.body", "body": b": keep-alive\n\n", "more_body": True})

    events = RunEvents(write, turn.thread_id, turn.question_id)
    if resumed is not None:
        events.done.update(resumed.shown)
        events.calls.update(resumed.answered)
    await write(wire.run_started(run.thread_id, run.run_id, turn.thread_id))
    try:
        await events.start()
        redactor = await db(thread_redactor)(turn.thread_id)
        state = await follow(
            turn,
            frames,
            gone,
            redactor,
            events.delta,
            heartbeat=keep_alive,
            observe=events.observe,
            on_check=events.on_check,
        )
        await events.finish()
        if state is None:
            last = wire.run_error(
                f"The agent did not answer within the wait; it goes on in thread "
                f"{turn.thread_id} (run again with that threadId once it has finished).",
                "timeout",
            )
        elif state.failure is not None and state.failure.code == "tool_call_waiting":
            # Parked on calls waiting for someone: AG-UI's interrupt outcome.
            interrupts = await db(run_interrupts)(turn.thread_id)
            last = (
                wire.run_finished(run.thread_id, run.run_id, None, interrupts)
                if interrupts
                else wire.run_error(state.failure.message, state.failure.code)
            )
        elif state.failure is not None:
            last = wire.run_error(state.failure.message, state.failure.code)
        else:
            # A resumed run's usage would count the interrupted run's too: left out.
            usage = (
                await db(turn_usage)(turn.thread_id, turn.question_id) if resumed is None else None
            )
            last = wire.run_finished(run.thread_id, run.run_id, usage)
    except (ClientGone, asyncio.CancelledError):
        raise
    except Exception as exc:
        # The status went out with the headers: what failed is told as the run's error.
        logger.exception("Streaming thread %s failed", turn.thread_id)
        last = wire.run_error(overload_reason(exc) or "Internal error", "server_error")
    await write(last)
    await send({"type": "http.response.body", "body": b"", "more_body": False})


# --- answers ----------------------------------------------------------------------------------


async def _error(send: Send, error: OpenAIError) -> None:
    headers: list[tuple[bytes, bytes]] = []
    if error.retry_after is not None:
        headers.append((b"retry-after", str(error.retry_after).encode()))
    if error.status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    if error.status == 405:
        headers.append((b"allow", b"POST"))
    await send_json(send, error.status, wire.encode(error.body()), headers)


def with_ag_ui(django_app: Any, prefix: str = PREFIX) -> Any:
    """``django_app`` with this door in front of it at ``prefix``."""
    return mounted(prefix, app, django_app)
