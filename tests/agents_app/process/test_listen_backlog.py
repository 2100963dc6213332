"""``python -m studio.serve`` listens with a backlog of its own (``studio/serve.py``); the
server started as production starts it is checked in
``tests/integration/test_live_sessions.py``."""

from __future__ import annotations

import pytest

from studio.serve import DEFAULT_BACKLOG, listen_backlog, with_backlog


@pytest.mark.parametrize(
    ("endpoint", "expected"),
    [
        ("tcp:port=8000:interface=0.0.0.0", "tcp:port=8000:interface=0.0.0.0:backlog=1024"),
        ("tcp6:port=8000:interface=\\:\\:", "tcp6:port=8000:interface=\\:\\::backlog=1024"),
        # An endpoint given with -e keeps the backlog it says.
        ("tcp:port=8000:backlog=64", "tcp:port=8000:backlog=64"),
        # Not a listening TCP socket of ours to size.
        ("unix:/run/studio.sock", "unix:/run/studio.sock"),
        ("fd:fileno=3", "fd:fileno=3"),
    ],
)
def test_tcp_endpoints_get_the_backlog(endpoint: str, expected: str) -> None:
    assert with_backlog(endpoint, 1024) == expected


def test_the_backlog_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STUDIO_LISTEN_BACKLOG", raising=False)
    assert listen_backlog() == DEFAULT_BACKLOG == 1024
    monkeypatch.setenv("STUDIO_LISTEN_BACKLOG", "4096")
    assert listen_backlog() == 4096


@pytest.mark.parametrize("value", ["many", "0", "-5", "1.5"])
def test_a_backlog_that_is_not_a_count_stops_the_start_saying_so(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("STUDIO_LISTEN_BACKLOG", value)
    with pytest.raises(SystemExit, match="STUDIO_LISTEN_BACKLOG must be a whole number"):
        listen_backlog()
