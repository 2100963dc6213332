"""``ViewGate``: a burst of requests cannot put dozens of threads next to the loop that
relays every socket's frames (issue #21). Counts and order only, no timing thresholds."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from django.http import HttpRequest, HttpResponse
from django.test import RequestFactory

from agents_app.web.view_gate import ViewGate


class Views:
    """An async ``get_response`` that counts how many requests are inside at once."""

    def __init__(self) -> None:
        self.inside = 0
        self.most = 0
        self.release = asyncio.Event()
        self.entered = 0

    async def __call__(self, request: HttpRequest) -> HttpResponse:
        self.inside += 1
        self.entered += 1
        self.most = max(self.most, self.inside)
        await self.release.wait()
        self.inside -= 1
        return HttpResponse("ok")


def _gate(views: Views) -> ViewGate:
    async def get_response(request: HttpRequest) -> HttpResponse:  # as Django adapts it
        return await views(request)

    return ViewGate(get_response)


def _request() -> HttpRequest:
    return RequestFactory().get("/api/threads")


async def test_at_most_the_configured_number_of_requests_run_at_once(settings: Any) -> None:
    settings.STUDIO_WEB_VIEW_CONCURRENCY = 2
    settings.STUDIO_WEB_VIEW_WAIT_MS = 60_000
    views = Views()
    gate = _gate(views)
    calls = [asyncio.create_task(gate(_request())) for _ in range(10)]
    while views.entered < 2:
        await asyncio.sleep(0)
    for _ in range(20):
        await asyncio.sleep(0)
    assert views.entered == 2  # the other eight wait on the loop, not on a thread
    views.release.set()
    responses = await asyncio.gather(*calls)
    assert [r.status_code for r in responses] == [200] * 10
    assert views.most == 2


async def test_a_request_that_waited_too_long_runs_anyway(settings: Any) -> None:
    settings.STUDIO_WEB_VIEW_CONCURRENCY = 1
    settings.STUDIO_WEB_VIEW_WAIT_MS = 20
    views = Views()
    gate = _gate(views)
    slow = asyncio.create_task(gate(_request()))  # holds the only permit until released
    while views.entered < 1:
        await asyncio.sleep(0)
    late = asyncio.create_task(gate(_request()))
    while views.entered < 2:  # admitted after its wait ran out, the permit still held
        await asyncio.sleep(0.01)
    assert views.most == 2
    views.release.set()
    assert (await slow).status_code == 200 and (await late).status_code == 200
    # Permits are not lost: the next request is admitted at once.
    views.release = asyncio.Event()
    views.release.set()
    assert (await gate(_request())).status_code == 200


async def test_zero_turns_the_bound_off(settings: Any) -> None:
    settings.STUDIO_WEB_VIEW_CONCURRENCY = 0
    views = Views()
    gate = _gate(views)
    calls = [asyncio.create_task(gate(_request())) for _ in range(5)]
    while views.entered < 5:
        await asyncio.sleep(0)
    views.release.set()
    await asyncio.gather(*calls)
    assert views.most == 5


def test_synchronous_servers_pass_straight_through() -> None:
    gate = ViewGate(lambda request: HttpResponse("sync"))
    assert gate(_request()).content == b"sync"


def test_the_gate_comes_first_in_the_middleware(settings: Any) -> None:
    assert settings.MIDDLEWARE[0] == "agents_app.web.view_gate.ViewGate"


@pytest.mark.django_db(transaction=True)
async def test_requests_through_the_asgi_application_pass_the_gate(settings: Any) -> None:
    from django.test import AsyncClient

    settings.STUDIO_WEB_VIEW_CONCURRENCY = 1
    client = AsyncClient()
    responses = await asyncio.gather(*(client.get("/api/threads") for _ in range(3)))
    # Django's own handler behind the gate: the API's JSON refusal, three times.
    assert [r.status_code for r in responses] == [401] * 3
    assert all(r["Content-Type"].startswith("application/json") for r in responses)
