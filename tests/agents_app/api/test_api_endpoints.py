"""Code-defined thread endpoints: file-route matching and the mount under /api/threads/{id}/."""

from __future__ import annotations

from typing import Any

import pytest
from django.http import HttpResponse

from agents_app.base.code_registry import reset_registry
from agents_app.base.endpoint_routes import resolve
from runtime.tools.registry import Registry, define_thread_endpoint
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)


def _registry(*routes: tuple[str, str]) -> Registry:
    return Registry(
        *(
            define_thread_endpoint(
                lambda r, s, p, n=f"{m} {route}": n, method=m, route=route, name=f"{m}{route}"
            )
            for m, route in routes
        )
    )


def test_static_beats_dynamic_beats_catch_all() -> None:
    registry = _registry(
        ("GET", "/files/{id}"), ("GET", "/files/latest"), ("GET", "/{*}"), ("GET", "/")
    )
    assert resolve(registry, "GET", "/files/latest")[0].route == "/files/latest"
    found, params = resolve(registry, "GET", "/files/42")
    assert found.route == "/files/{id}" and params == {"id": "42"}
    found, params = resolve(registry, "GET", "/files/42/raw")
    assert found.route == "/{*}" and params == {"*": "files/42/raw"}
    assert resolve(registry, "GET", "")[0].route == "/"
    assert resolve(registry, "POST", "/files/42") is None


def test_catch_all_needs_at_least_one_segment() -> None:
    registry = _registry(("GET", "/docs/{*}"))
    assert resolve(registry, "GET", "/docs") is None
    assert resolve(registry, "GET", "/docs/a/b")[1] == {"*": "a/b"}


@pytest.fixture
def endpoints() -> Any:
    async def summary(request: Any, state: Any, params: dict[str, str]) -> dict[str, Any]:
        assert state.execution is None
        return {"thread": state.thread_id, "params": params, "method": request.method}

    async def created(request: Any, state: Any, params: dict[str, str]) -> Any:
        await state.set_value("posted", params["name"])
        return 201, {"ok": True}

    def raw(request: Any, state: Any, params: dict[str, str]) -> HttpResponse:
        return HttpResponse("plain", content_type="text/plain")

    reset_registry(
        Registry(
            define_thread_endpoint(summary, route="/summary/{kind}"),
            define_thread_endpoint(created, method="POST", route="/items/{name}"),
            define_thread_endpoint(raw, route="/raw"),
        )
    )
    yield
    reset_registry(None)


@pytest.mark.django_db
def test_endpoints_get_state_and_params(
    as_: Any, alice: Any, bob: Any, thread_of: Any, endpoints: Any
) -> None:
    thread = thread_of(alice)
    client = as_(alice)
    body = client.get(f"/api/threads/{thread.pk}/summary/weekly").json()
    assert body == {"thread": str(thread.pk), "params": {"kind": "weekly"}, "method": "GET"}
    posted = client.post_json(f"/api/threads/{thread.pk}/items/book")
    assert posted.status_code == 201 and posted.json() == {"ok": True}
    assert client.get(f"/api/threads/{thread.pk}/raw").content == b"plain"
    assert client.get(f"/api/threads/{thread.pk}/nothing").json() == {"error": "Not found"}
    assert client.delete(f"/api/threads/{thread.pk}/raw").status_code == 404
    assert as_(bob).get(f"/api/threads/{thread.pk}/raw").status_code == 403
