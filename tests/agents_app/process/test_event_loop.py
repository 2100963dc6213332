"""``STUDIO_EVENT_LOOP``: which loop Daphne and the workers run (studio/event_loop.py)."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest
import uvloop

from studio import event_loop
from tests.agents_app.process.manage_support import check_at_start


def test_the_default_loop_is_uvloop(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STUDIO_EVENT_LOOP", raising=False)
    loop = event_loop.new_loop()
    try:
        assert isinstance(loop, uvloop.Loop)
        assert event_loop.kind_of(loop) == "uvloop"
    finally:
        loop.close()


def test_asyncio_keeps_the_standard_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STUDIO_EVENT_LOOP", "asyncio")
    loop = event_loop.new_loop()
    try:
        assert not isinstance(loop, uvloop.Loop)
        assert event_loop.kind_of(loop) == "asyncio"
    finally:
        loop.close()


def test_an_unknown_loop_is_refused_with_the_choices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STUDIO_EVENT_LOOP", "tokio")
    with pytest.raises(ValueError, match="uvloop, asyncio"):
        event_loop.new_loop()


def test_sessions_stream_on_uvloop(monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine's path of a token (timers, futures, tasks) on the loop it will run on."""
    monkeypatch.delenv("STUDIO_EVENT_LOOP", raising=False)

    async def stream() -> list[int]:
        got = []
        for n in range(5):
            await asyncio.sleep(0.001)
            got.append(n)
        return got

    with asyncio.Runner(loop_factory=event_loop.loop_factory()) as runner:
        assert runner.run(stream()) == [0, 1, 2, 3, 4]
        assert event_loop.kind_of(runner.get_loop()) == "uvloop"


DAPHNE_CHECK = """
import sys
from studio.event_loop import install_policy, check_server_loop
if sys.argv[1] == "serve":
    install_policy()
from twisted.internet import asyncioreactor
import asyncio
asyncioreactor.install(asyncio.new_event_loop())
print(check_server_loop())
"""


def _daphne_like(how: str, loop: str | None) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin"}
    if loop is not None:
        env["STUDIO_EVENT_LOOP"] = loop
    return subprocess.run(
        [sys.executable, "-c", DAPHNE_CHECK, how], capture_output=True, text=True, env=env
    )


def test_daphne_started_by_studio_serve_runs_the_configured_loop() -> None:
    assert _daphne_like("serve", None).stdout.strip() == "uvloop"
    assert _daphne_like("serve", "asyncio").stdout.strip() == "asyncio"


def test_plain_daphne_with_uvloop_asked_for_explicitly_is_refused() -> None:
    done = _daphne_like("plain", "uvloop")
    assert done.returncode != 0
    assert "python -m studio.serve" in done.stderr


def test_plain_daphne_with_the_default_runs_asyncio_and_says_so() -> None:
    done = _daphne_like("plain", None)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "asyncio"
    assert "start it with `python -m studio.serve`" in done.stderr


def test_every_process_refuses_an_unknown_loop_at_start() -> None:
    """The settings check it, so a worker fails at start, not at its first session."""
    done = check_at_start(STUDIO_EVENT_LOOP="tokio")
    assert done.returncode != 0
    assert "ImproperlyConfigured: STUDIO_EVENT_LOOP must be one of uvloop, asyncio" in done.stderr
