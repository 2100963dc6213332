"""Issue #54, rows F2 and F1 at the HTTP door: user endpoints (``define_user_endpoint``,
discovered from ``agents/users/``) at ``/api/users/me/<path>`` in the caller's own scope and
at ``/api/users/{id}/<path>`` for admins, with the person's ``UserState``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model

from agents_app.base.code_registry import reset_registry
from agents_app.models import UserValue
from agents_app.services.env.writes import EnvPatch, env_apply
from agents_app.services.users import grants
from runtime.extend import UserEndpointError, define_user_endpoint
from runtime.tools.registry import Registry, discover
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)
from tests.agents_app.api.api_support import ApiClient
from tests.agents_app.services.test_egress import Listener

pytestmark = pytest.mark.django_db

SECRET = "sk-user-scope-7e1f0c9d2b"


async def profile(request: Any, user: Any, params: dict[str, str]) -> Any:
    """Who I am, and what I remembered."""
    return {
        "me": user.identity().to_dict(),
        "caller": request.caller.to_dict(),
        "color": await user.get_value("color"),
    }


async def remember(request: Any, user: Any, params: dict[str, str]) -> Any:
    await user.set_value(params["key"], request.body)
    page = await user.list_values(prefix="")
    return 201, {"keys": [e.key for e in page.entries], "total": page.total}


async def tour(request: Any, user: Any, params: dict[str, str]) -> Any:
    """Every part of UserState a handler reads without side effects elsewhere."""
    threads = await user.list_threads()
    handle = user.thread(threads[0]["id"])
    posted = await handle.post_message("from my scope")
    messages = await handle.get_messages()
    shop = await user.env("SHOP_KEY")
    return {
        "threads": [t["id"] for t in threads],
        "posted": posted,
        "pending": [m["content"] for m in messages],
        "shop_key_length": len(shop),
        "clients": await user.clients(),
    }


async def refuse(request: Any, user: Any, params: dict[str, str]) -> Any:
    raise UserEndpointError(422, "Not like that.")


async def crash(request: Any, user: Any, params: dict[str, str]) -> Any:
    raise RuntimeError(f"leaked {await user.env('SHOP_KEY')}")


async def kv_shadow(request: Any, user: Any, params: dict[str, str]) -> Any:
    return {"shadow": True}


async def crm_sync(request: Any, user: Any, params: dict[str, str]) -> Any:
    response = await user.fetch("crm", request.body["url"])
    return {"status": response.status_code, "sent": dict(response.request.headers)}


async def others_thread(request: Any, user: Any, params: dict[str, str]) -> Any:
    return await user.thread(request.query["id"]).get_messages()


def _user_env(user: Any, **values: str) -> None:
    # The service /api/users/me/env writes with (that route is shadowed while the users
    # admin API's /users/{user_id}/env takes "me" as an id).
    env_apply(scope="user", patch=EnvPatch(patch=values), user=user, actor=user)


@pytest.fixture(autouse=True)
def _endpoints() -> Iterator[None]:
    reset_registry(
        Registry(
            define_user_endpoint(profile, route="/profile"),
            define_user_endpoint(remember, method="PUT", route="/memory/{key}"),
            define_user_endpoint(tour, method="POST", route="/tour"),
            define_user_endpoint(refuse, route="/refuse"),
            define_user_endpoint(crash, route="/crash"),
            define_user_endpoint(kv_shadow, route="/kv"),
            define_user_endpoint(others_thread, route="/peek"),
            define_user_endpoint(crm_sync, method="POST", route="/crm/sync"),
            define_user_endpoint(crm_sync, method="POST", route="/crm/other", name="other"),
        )
    )
    yield
    reset_registry(None)


def test_F2_a_user_endpoint_runs_in_the_callers_own_scope(as_: Any, alice: Any, bob: Any) -> None:
    UserValue.objects.create(user=alice, key="color", value="teal", updated_at=1)
    mine = as_(alice).get("/api/users/me/profile")
    assert mine.status_code == 200, mine.content
    body = mine.json()
    assert body["me"]["id"] == str(alice.pk) and body["me"]["username"] == "alice"
    assert body["me"]["role"] == "user"  # the person; the key is the caller's role
    assert body["caller"]["role"] == "api" and body["caller"]["id"] == str(alice.pk)
    assert body["color"] == "teal"

    # Bob reaches the same route, in his own scope: none of Alice's values.
    theirs = as_(bob).get("/api/users/me/profile").json()
    assert theirs["me"]["username"] == "bob" and theirs["color"] is None


def test_F1_a_user_endpoint_writes_and_lists_the_persons_own_values(
    as_: Any, alice: Any, bob: Any
) -> None:
    put = as_(alice).put(
        "/api/users/me/memory/tea", {"milk": True}, content_type="application/json"
    )
    assert put.status_code == 201, put.content
    assert put.json() == {"keys": ["tea"], "total": 1}
    assert as_(alice).get("/api/users/me/kv?key=tea").json()["value"] == {"milk": True}
    assert not UserValue.objects.filter(user=bob).exists()


def test_F2_unknown_paths_are_404_and_other_methods_405_as_json(as_: Any, alice: Any) -> None:
    client = as_(alice)
    missing = client.get("/api/users/me/nothing/here")
    assert missing.status_code == 404 and "No user endpoint" in missing.json()["error"]
    wrong = client.delete("/api/users/me/profile")
    assert wrong.status_code == 405 and "GET" in wrong.json()["error"]
    refused = client.get("/api/users/me/refuse")
    assert refused.status_code == 422 and refused.json() == {"error": "Not like that."}
    bad_json = client.put("/api/users/me/memory/x", "{not json", content_type="application/json")
    assert bad_json.status_code == 400 and bad_json.json()["error"] == "Invalid JSON body"
    lone = client.put("/api/users/me/memory/x", '"a\\ud800"', content_type="application/json")
    assert lone.status_code == 400 and "Text may not contain" in lone.json()["error"]


def test_F2_a_failing_handler_is_a_500_sentence_without_what_it_read(as_: Any, alice: Any) -> None:
    client = as_(alice)
    _user_env(alice, SHOP_KEY=SECRET)
    failed = client.get("/api/users/me/crash")
    assert failed.status_code == 500
    assert failed.json()["error"] == "The user endpoint /crash failed (RuntimeError)."
    assert SECRET not in failed.content.decode()


def test_F2_the_built_in_users_me_routes_win(as_: Any, alice: Any) -> None:
    kv = as_(alice).get("/api/users/me/kv")
    assert kv.status_code == 200 and "entries" in kv.json()  # /kv is the user KV, not ours


def test_F2_the_admin_route_reaches_another_persons_scope_only_with_the_right(
    as_: Any, alice: Any, bob: Any, ops: Any
) -> None:
    UserValue.objects.create(user=alice, key="color", value="teal", updated_at=1)
    path = f"/api/users/{alice.pk}/profile"
    # Bob (no admin rights) is refused, whatever scope he names; staff status alone is not
    # the right either.
    for outsider in (bob, get_user_model().objects.create_user("staffer", is_staff=True)):
        refused = as_(outsider).get(path)
        assert refused.status_code == 403, refused.content
        assert "auth.change_user" in refused.json()["error"]
    assert as_(bob).get(f"/api/users/{alice.pk}/").status_code == 403

    admin = as_(ops).get(path)
    assert admin.status_code == 200, admin.content
    body = admin.json()
    assert body["me"]["username"] == "alice" and body["color"] == "teal"
    assert body["caller"]["username"] == "ops"
    assert as_(ops).get("/api/users/999999/profile").status_code == 404
    assert as_(ops).get("/api/users/nobody/profile").json()["error"].startswith("User not found")


def test_F2_anonymous_callers_are_401(anonymous: ApiClient, alice: Any) -> None:
    assert anonymous.get("/api/users/me/profile").status_code == 401
    assert anonymous.get(f"/api/users/{alice.pk}/profile").status_code == 401


def test_F1_the_scope_reaches_the_persons_threads_env_and_clients(
    as_: Any, alice: Any, bob: Any, thread_of: Any
) -> None:
    client = as_(alice)
    _user_env(alice, SHOP_KEY=SECRET)
    thread = thread_of(alice)
    bobs = thread_of(bob)
    toured = client.post_json("/api/users/me/tour")
    assert toured.status_code == 200, toured.content
    body = toured.json()
    assert body["threads"] == [str(thread.pk)]  # never Bob's
    assert body["posted"]["messageId"]
    assert "from my scope" in body["pending"]
    assert body["shop_key_length"] == len(SECRET) and body["clients"] == []
    assert SECRET not in toured.content.decode()

    # Bob's thread is not Alice's to read from her scope.
    peek = client.get(f"/api/users/me/peek?id={bobs.pk}")
    assert peek.status_code == 403, peek.content


def test_F2_user_endpoints_are_discovered_from_the_agents_users_folder(tmp_path: Path) -> None:
    folder = tmp_path / "agents" / "users" / "notes"
    folder.mkdir(parents=True)
    (folder / "[id].put.py").write_text(
        "from runtime.extend import define_user_endpoint\n\n"
        "@define_user_endpoint\n"
        "async def save_note(request, user, params):\n"
        "    return params\n",
        encoding="utf-8",
    )
    (folder / "index.py").write_text(
        "from runtime.extend import define_user_endpoint\n\n"
        "async def notes(request, user, params):\n"
        "    return []\n\n"
        "listing = define_user_endpoint(notes)\n",
        encoding="utf-8",
    )
    registry = discover(folders=[tmp_path])
    assert sorted(registry.user_endpoints) == ["GET /notes", "PUT /notes/{id}"]
    assert registry.user_endpoints["PUT /notes/{id}"].name == "save_note"


def test_F1_fetch_lends_the_persons_grant_to_the_user_endpoint_it_names(
    as_: Any, alice: Any
) -> None:
    server = Listener(status=200)
    try:
        origin = f"http://127.0.0.1:{server.port}"
        settings = {"origins": [origin], "allow": {"userEndpoints": ["crm/sync"]}}
        grants.grant_put(
            user_id=alice.pk, name="crm", kind="bearer", secret=SECRET, settings=settings
        )
        synced = as_(alice).post_json("/api/users/me/crm/sync", {"url": origin + "/people"})
        assert synced.status_code == 200, synced.content
        assert synced.json()["status"] == 200
        assert SECRET not in synced.content.decode()  # the handler never saw it
        [(path, headers)] = server.received
        assert path == "/people" and headers["authorization"] == f"Bearer {SECRET}"

        # Another of her endpoints is not named by the grant: refused, nothing sent.
        other = as_(alice).post_json("/api/users/me/crm/other", {"url": origin + "/people"})
        assert other.status_code == 403, other.content
        assert "user endpoint 'crm/other'" in other.json()["error"]
        assert len(server.received) == 1
    finally:
        server.close()
