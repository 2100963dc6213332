"""Fixtures for the adapter tests: a replay server on 127.0.0.1 and an httpx client."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from .replay import ReplayServer

# A key that must never show up in anything but the auth header of a request.
PLANTED_KEY = "sk-PLANTED-7f3c9e21d4b8a6f0-never-log-me"


@pytest.fixture
def replay() -> Iterator[ReplayServer]:
    server = ReplayServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=httpx.Timeout(10.0)) as http:
        yield http
