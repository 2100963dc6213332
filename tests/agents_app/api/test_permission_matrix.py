"""The permission matrix, generated from the routes the API serves (issue #36).

Every ``/api/`` route × superuser, staff without permissions, staff holding the route's one
permission, staff holding another permission (the MCP manager), the thread's owner, another
user and anonymous: who is refused and who is let through follows
``agents_app.base.permissions.API_ROUTES`` alone. A new route is in the matrix the moment it is
mounted (and the app refuses to start if it has no rule).
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from agents_app.api import ROUTERS
from agents_app.api.route_rules import route_paths
from agents_app.base.errors import THREAD_FORBIDDEN
from agents_app.base.permissions import (
    API_ROUTES,
    InPerson,
    Perm,
    Public,
    Rule,
    SignedIn,
    ThreadRule,
)
from agents_app.models import Thread
from tests.agents_app.api.api_support import ApiClient, client_for, define_agent

SERVED = sorted({(method, path) for method, path, _ in route_paths(ROUTERS)})
GATE_WORDS = "Forbidden: Admin access required"

# Bodies that pass each mutating thread route's schema, so an outsider meets the thread
# check (inside the view) rather than the body's validation.
BODIES: dict[tuple[str, str], Any] = {
    ("POST", "/threads/{thread_id}/messages"): {"role": "user", "content": "hi"},
    ("PATCH", "/threads/{thread_id}/messages/{message_id}"): {"content": "changed"},
    ("PATCH", "/threads/{thread_id}"): {"tags": ["x"]},
    ("POST", "/threads/{thread_id}/kv"): {"key": "k", "value": 1},
    ("POST", "/threads/{thread_id}/tool-result"): {"tool_call_id": "call_1", "approve": True},
    ("POST", "/threads/{thread_id}/continue"): {},
    ("POST", "/threads/{thread_id}/variables/{request_id}"): {"values": {"X": "1"}},
    ("POST", "/threads/{thread_id}/inputs/{request_id}"): {"action": "decline"},
    ("POST", "/threads/{thread_id}/stop"): {},
    ("POST", "/threads/{thread_id}/fs/{path:path}/upload/start"): {"totalSize": 1},
    ("POST", "/threads/{thread_id}/fs/{path:path}/upload/complete"): {"expectedChunks": 1},
    ("POST", "/threads/{thread_id}/rpc"): {"method": "getThreadMeta"},
    ("POST", "/threads"): {"agent_id": "helper"},
    ("POST", "/threads/{thread_id}/messages/{message_id}/feedback"): {"score": 1},
    ("POST", "/threads/{thread_id}/messages/{message_id}/edit"): {"content": "changed"},
    ("PUT", "/threads/{thread_id}/active"): {"message_id": "no-such-message"},
    ("POST", "/threads/{thread_id}/fork"): {"message_id": "no-such-message"},
    ("POST", "/schedules"): {"agent": "helper", "message": "hi", "intervalSeconds": 60},
    ("POST", "/schedules/preview"): {"intervalSeconds": 60},
    ("POST", "/triggers"): {"agent": "helper", "template": "hi"},
    ("POST", "/webhooks"): {"url": "https://x.example/h", "secretEnv": "S", "events": ["x"]},
}


@dataclass(frozen=True)
class Persona:
    name: str
    staff: bool = False
    superuser: bool = False
    perms: tuple[str, ...] = ()
    owner: bool = False
    anonymous: bool = False


def personas_for(rule: Rule) -> list[Persona]:
    own_perm: tuple[str, ...] = ()
    if isinstance(rule, Perm):
        own_perm = rule.codenames
    elif isinstance(rule, ThreadRule):
        own_perm = (f"agents_app.{rule.action}_thread",)
    return [
        Persona("anonymous", anonymous=True),
        Persona("staff without permissions", staff=True),
        Persona("MCP manager", staff=True, perms=("agents_app.change_mcpserver",)),
        Persona("other user"),
        Persona("owner", owner=True),
        Persona("staff holding the route's permission", staff=True, perms=own_perm),
        Persona("superuser", staff=True, superuser=True),
    ]


def expected_allowed(rule: Rule, persona: Persona) -> bool:
    if isinstance(rule, Public):
        return True
    if persona.anonymous:
        return False
    if isinstance(rule, InPerson):
        return False  # every persona here calls with an API key
    if persona.superuser or isinstance(rule, SignedIn):
        return True
    if isinstance(rule, Perm):
        return set(rule.codenames) <= set(persona.perms)
    return persona.owner or f"agents_app.{rule.action}_thread" in persona.perms


def make_persona(persona: Persona, index: int) -> Any:
    User = get_user_model()
    user = User.objects.create_user(
        username=f"p{index}-{re.sub(r'[^a-z]', '', persona.name)}",
        password="pw-for-tests-1",
        is_staff=persona.staff,
        is_superuser=persona.superuser,
    )
    for dotted in persona.perms:
        app_label, codename = dotted.split(".")
        user.user_permissions.add(
            Permission.objects.get(content_type__app_label=app_label, codename=codename)
        )
    return user


def concrete(path: str, thread_id: str) -> str:
    values = {
        "thread_id": thread_id,
        "message_id": str(uuid.uuid4()),
        "effect_id": str(uuid.uuid4()),
        "log_id": str(uuid.uuid4()),
        "key_id": "999999",
        "provider": "test",
        "path:path": "notes.txt",
        "path:rest": "no-such-endpoint",
        "index": "0",
    }

    def fill(match: re.Match[str]) -> str:
        key = match.group(1)
        if key == "name":
            for prefix, name in (
                ("/agents", "helper"),
                ("/variables/agents", "helper"),
                ("/prompts", "helper-prompt"),
                ("/variables/prompts", "helper-prompt"),
                ("/models", "helper-model"),
                ("/providers", "test"),
            ):
                if path.startswith(prefix):
                    return name
            return "no-such-name"
        if key in values:
            return values[key]
        # A parameter this table does not know: an id that matches nothing (the gate must
        # refuse or let through before the view looks it up).
        return str(uuid.uuid4()) if key.endswith("_id") else "no-such-thing"

    return "/api" + re.sub(r"\{([^}]+)\}", fill, path)


def call(client: ApiClient, method: str, url: str, body: Any) -> Any:
    if method == "GET":
        return client.get(url)
    if body is None:
        return client.generic(method, url)
    return client.generic(method, url, data=json.dumps(body), content_type="application/json")


def is_gate_refusal(response: Any) -> bool:
    if response.status_code == 401:
        return True
    if response.status_code != 403:
        return False
    error = response.json().get("error", "")
    in_person = {r.refusal for r in API_ROUTES.values() if isinstance(r, InPerson)}
    return error.startswith(GATE_WORDS) or error == THREAD_FORBIDDEN or error in in_person


def test_every_served_route_has_exactly_one_rule_and_no_rule_is_stale() -> None:
    assert set(SERVED) == set(API_ROUTES), (
        f"served without a rule: {sorted(set(SERVED) - set(API_ROUTES))}; "
        f"rules for nothing served: {sorted(set(API_ROUTES) - set(SERVED))}"
    )


@pytest.mark.django_db
@pytest.mark.parametrize(("method", "path"), SERVED, ids=[f"{m} {p}" for m, p in SERVED])
def test_permission_matrix(method: str, path: str) -> None:
    define_agent("helper")
    rule = API_ROUTES[(method, path)]
    people = personas_for(rule)
    users = {p: None if p.anonymous else make_persona(p, i) for i, p in enumerate(people)}
    owner = next(u for p, u in users.items() if p.owner)
    agent_pk = _agent_pk()
    thread = Thread.objects.create(owner=owner, agent_id=agent_pk, origin_agent_id=agent_pk)
    url = concrete(path, str(thread.pk))
    body = BODIES.get((method, path))
    # Refused callers first: an allowed caller may delete or change what they would reach.
    ordered = sorted(people, key=lambda p: expected_allowed(rule, p))
    wrong = []
    for persona in ordered:
        user = users[persona]
        client = ApiClient() if user is None else client_for(user)
        response = call(client, method, url, body)
        allowed = expected_allowed(rule, persona)
        if allowed == is_gate_refusal(response):
            wrong.append(
                f"{persona.name}: expected {'allowed' if allowed else 'refused'}, "
                f"got {response.status_code} {response.content[:160]!r}"
            )
        if not allowed and not persona.anonymous:
            assert response.status_code == 403, (persona.name, response.content[:200])
    assert not wrong, f"{method} {path} ({rule.describe()}):\n" + "\n".join(wrong)


def _agent_pk() -> Any:
    from agents_app.models import Agent

    return Agent.objects.get(name="helper").pk
