"""Issue #54, row H1 (spec 0.2.0 ``ThreadEndpointAuth``, ``access: 'public'``) over HTTP: a
thread endpoint whose handler takes a 4th parameter gets ``{caller, threadAccess}``; one
defined ``access="public"`` is reached by anyone (anonymous: ``caller`` null, ``threadAccess``
false), never more of the thread than its handler returns; 3-parameter handlers are called as
before; an unknown thread is the same 404 for everyone.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from agents_app.base.code_registry import reset_registry
from runtime.tools.registry import Registry, RegistryError, define_thread_endpoint
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)
from tests.agents_app.api.api_support import ApiClient

pytestmark = pytest.mark.django_db


def _who(auth: Any) -> dict[str, Any]:
    caller = auth["caller"]
    return {
        "caller": None if caller is None else caller.to_dict(),
        "threadAccess": auth["threadAccess"],
    }


async def peek(request: Any, state: Any, params: dict[str, str], auth: Any) -> Any:
    """A share page: anyone sees how many messages there are, nothing else."""
    page = await state.get_messages(limit=1)
    return {"messages": page.total, **_who(auth)}


async def ping(request: Any, state: Any, params: dict[str, str], auth: Any) -> Any:
    """A per-thread webhook: anyone may post."""
    await state.set_value("pinged", request.body.decode())
    return 202, _who(auth)


async def status(request: Any, state: Any, params: dict[str, str], auth: Any) -> Any:
    return _who(auth)


async def legacy(request: Any, state: Any, params: dict[str, str]) -> Any:
    return {"thread": state.thread_id}


@pytest.fixture(autouse=True)
def _endpoints() -> Iterator[None]:
    reset_registry(
        Registry(
            define_thread_endpoint(peek, route="/peek", access="public"),
            define_thread_endpoint(ping, method="POST", route="/ping", access="public"),
            define_thread_endpoint(status, route="/status"),
            define_thread_endpoint(legacy, route="/legacy"),
        )
    )
    yield
    reset_registry(None)


def _user(user: Any, role: str) -> dict[str, Any]:
    return {
        "id": str(user.pk),
        "username": user.username,
        "role": role,
        "permissions": [],
        "email": "",
        "display_name": user.username,
        "avatar_url": None,
    }


def test_H1_a_public_endpoint_tells_anonymous_outsiders_and_the_owner_apart(
    as_: Any, alice: Any, bob: Any, thread_of: Any, anonymous: ApiClient
) -> None:
    thread = thread_of(alice)
    url = f"/api/threads/{thread.pk}/peek"

    nobody = anonymous.get(url)
    assert nobody.status_code == 200, nobody.content
    assert nobody.json() == {"messages": 0, "caller": None, "threadAccess": False}
    outsider = as_(bob).get(url).json()
    assert outsider == {"messages": 0, "caller": _user(bob, "api"), "threadAccess": False}
    owner = as_(alice).get(url).json()
    assert owner == {"messages": 0, "caller": _user(alice, "api"), "threadAccess": True}
    browser = ApiClient()
    browser.force_login(alice)  # the session cookie: a person, not an API key
    assert browser.get(url).json()["caller"]["role"] == "user"

    posted = anonymous.post(f"/api/threads/{thread.pk}/ping", "hello", content_type="text/plain")
    assert posted.status_code == 202 and posted.json() == {"caller": None, "threadAccess": False}
    values = as_(alice).get(f"/api/threads/{thread.pk}/kv?key=pinged").json()
    assert values["value"] == "hello"


def test_H1_an_unknown_thread_is_the_same_404_for_everyone(
    as_: Any, alice: Any, bob: Any, anonymous: ApiClient
) -> None:
    missing = uuid.uuid4()
    answers = [
        (r.status_code, r.json())
        for r in (
            anonymous.get(f"/api/threads/{missing}/peek"),
            as_(bob).get(f"/api/threads/{missing}/peek"),
            as_(alice).get(f"/api/threads/{missing}/peek"),
        )
    ]
    assert answers == [(404, {"error": f"Thread not found: {missing}"})] * 3


def test_H1_other_endpoints_keep_the_threads_own_rule(
    as_: Any, alice: Any, bob: Any, thread_of: Any, anonymous: ApiClient
) -> None:
    thread = thread_of(alice)
    url = f"/api/threads/{thread.pk}/status"

    assert anonymous.get(url).status_code == 401
    assert anonymous.get(f"/api/threads/{thread.pk}/legacy").status_code == 401
    refused = as_(bob).get(url)
    assert refused.status_code == 403
    assert as_(alice).get(url).json() == {"caller": _user(alice, "api"), "threadAccess": True}
    # A handler written with three parameters is called with three, as before.
    assert as_(alice).get(f"/api/threads/{thread.pk}/legacy").json() == {"thread": str(thread.pk)}


def test_H1_an_access_other_than_public_is_refused_when_defined() -> None:
    with pytest.raises(RegistryError) as refused:
        define_thread_endpoint(status, route="/status", access="private")
    assert str(refused.value) == (
        "define_thread_endpoint: access must be 'public' or left out, not 'private'."
    )


def test_H1_anonymous_calls_of_public_endpoints_are_limited_per_address(
    as_: Any, alice: Any, thread_of: Any, anonymous: ApiClient, settings: Any
) -> None:
    # A public endpoint runs engine code for anyone who finds the URL: nobody signed in is
    # counted per client address (STUDIO_PUBLIC_ENDPOINT_RATE_PER_ADDRESS, default 60/m).
    settings.STUDIO_PUBLIC_ENDPOINT_RATE_PER_ADDRESS = (2, 60)
    url = f"/api/threads/{thread_of(alice).pk}/peek"
    assert [anonymous.get(url).status_code for _ in range(2)] == [200, 200]
    refused = anonymous.get(url)
    assert refused.status_code == 429, refused.content
    assert refused.json()["error"].startswith(
        "Too many requests to public endpoints from your address: the limit is 2 per minute."
    )
    assert int(refused["Retry-After"]) >= 1
    # Signed-in callers are not counted by it.
    assert [as_(alice).get(url).status_code for _ in range(3)] == [200, 200, 200]
