"""Property-based requests over the whole OpenAPI schema: no input may cause a 5xx,
and every error is a JSON ``{"error": …}``.

Schemathesis generates requests from ``/api/openapi.json`` and sends them to the
WSGI app as staff (every route is reachable); ``thread_id`` path parameters point
at a real thread so the handlers behind the access check are exercised too. Each
example is also drawn as one of the known-bad shapes: a thread id that is not a
UUID, lone UTF-16 surrogates in every string of the JSON body, a URL past the
length limit. The number of examples per operation is bounded so the whole file
runs in about a minute.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import pytest
import schemathesis
from django.db import transaction
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from werkzeug.test import Client as WsgiClient

from agents_app.services.access.api_keys import api_key_create
from studio.wsgi import application
from tests.agents_app.api.api_support import _api_hosts, define_agent  # noqa: F401

schema = schemathesis.openapi.from_wsgi("/api/openapi.json", application)
MAX_EXAMPLES = int(os.environ.get("API_FUZZ_EXAMPLES", "20"))
# Each operation's test in its own transaction (a savepoint inside ``staff_setup``'s). A mark
# here, not a parameter: Hypothesis derives the examples of ``derandomize`` from the test
# function's text, so its signature stays as it was.
pytestmark = [pytest.mark.django_db, pytest.mark.sweep]


@pytest.fixture(scope="module")
def keep_connection() -> Iterator[None]:
    """Keep the test's DB connection across requests, as Django's test client does (the
    raw WSGI app closes it at the end of every request, which would end the module's
    transaction, ``staff_setup``)."""
    from django.core.signals import request_finished, request_started
    from django.db import close_old_connections

    for signal in (request_started, request_finished):
        signal.disconnect(close_old_connections)
    yield
    for signal in (request_started, request_finished):
        signal.connect(close_old_connections)


@pytest.fixture(scope="module")
def staff_setup(
    django_db_setup: Any, django_db_blocker: Any, keep_connection: None
) -> Iterator[dict[str, str]]:
    """An agent, a staff user with an API key, and a thread, made once for the module's 190
    operations, not once each (the file alone on a quiet machine: 54.2 → 51.0 s). As
    Django's ``TestCase.setUpTestData``: made in a transaction that each test's own (a
    savepoint, the ``db`` fixture) sits inside, so what an operation deletes or changes
    comes back for the next; rolled back at the module's end."""
    from django.contrib.auth import get_user_model

    from agents_app.orchestration.thread_creation import thread_create

    with django_db_blocker.unblock(), transaction.atomic():
        define_agent("helper")
        staff = get_user_model().objects.create_user(
            username="fuzz-ops", password="pw-for-tests-1", is_staff=True, is_superuser=True
        )
        _, raw = api_key_create(user=staff, name="fuzz")
        thread = thread_create(user=staff, agent_name="helper")
        yield {"key": raw, "thread_id": str(thread.pk)}
        transaction.set_rollback(True)


VARIANTS = ["as generated", "non-uuid thread id", "lone surrogates", "long url"]
BAD_THREAD_IDS = ["not-a-uuid", "1", "x" * 200, "00000000-0000-0000-0000-00000000000g"]


def _with_surrogates(value: Any) -> Any:
    """``value`` with a lone surrogate appended to every string (keys included)."""
    if isinstance(value, str):
        return value + "\ud800"
    if isinstance(value, dict):
        return {_with_surrogates(k): _with_surrogates(v) for k, v in value.items()} or {
            "note": "\ud800"
        }
    if isinstance(value, list):
        return [_with_surrogates(v) for v in value]
    return value


def _apply(variant: str, case: Any, bad_id: str) -> None:
    if variant == "non-uuid thread id" and "thread_id" in (case.path_parameters or {}):
        case.path_parameters["thread_id"] = bad_id
    elif variant == "long url":
        case.query = {**(case.query or {}), "pad": "x" * 9000}


def _assert_surrogates_refused(case: Any, headers: dict[str, str]) -> None:
    """Send the generated body with lone surrogates in every string, JSON-escaped
    ("\\ud800") as a client writes them. Sent by hand to the same WSGI app: Schemathesis
    checks its own bodies with a validator that cannot hold a lone surrogate."""
    body = json.dumps(_with_surrogates(case.body))
    response = WsgiClient(application).open(
        case.formatted_path,
        method=case.method,
        query_string=urlencode(case.query or {}, doseq=True),
        data=body,
        content_type="application/json",
        headers=headers,
    )
    where = (case.method, case.formatted_path, response.get_data()[:300])
    assert response.status_code < 500, where
    assert response.headers["Content-Type"].startswith("application/json"), where
    if not _takes_json(case):
        return  # bytes (an upload's chunk, ``*/*``): "\\ud800" in them is no text to refuse
    if "\\ud800" in body and not _refused_by_its_rule(response):
        assert response.status_code == 400, where
        assert "Text may not contain" in json.loads(response.get_data())["error"]


def _takes_json(case: Any) -> bool:
    """Whether the operation declares a JSON body. Schemathesis sends a JSON body to a route
    that takes any bytes too (``*/*``); found when other examples were drawn."""
    return any(body.media_type == "application/json" for body in case.operation.body)


def _refused_by_its_rule(response: Any) -> bool:
    """The route's rule refused the caller before the body was read (an API key creating a
    key): nothing of the body was looked at, so no text error is owed."""
    from agents_app.base.permissions import API_ROUTES, InPerson

    refusals = {r.refusal for r in API_ROUTES.values() if isinstance(r, InPerson)}
    return response.status_code == 403 and json.loads(response.get_data())["error"] in refusals


def _assert_json_error(response: Any) -> None:
    if response.status_code < 400:
        return
    content_type = (response.headers.get("content-type") or [""])[0]
    assert content_type.startswith("application/json"), (response.status_code, content_type)
    body = json.loads(response.content)
    assert isinstance(body, dict) and isinstance(body.get("error"), str), body


@schema.parametrize()
@schema.given(variant=st.sampled_from(VARIANTS), bad_id=st.sampled_from(BAD_THREAD_IDS))
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    derandomize=True,
)
def test_no_request_makes_the_api_fail_or_answer_anything_but_json_errors(
    case: Any, variant: str, bad_id: str, staff_setup: dict[str, str]
) -> None:
    if case.path_parameters and "thread_id" in case.path_parameters:
        case.path_parameters["thread_id"] = staff_setup["thread_id"]
    _apply(variant, case, bad_id)
    headers = {"Authorization": f"Bearer {staff_setup['key']}"}
    json_body = case.media_type == "application/json" and isinstance(case.body, dict | list | str)
    if variant == "lone surrogates" and json_body:
        _assert_surrogates_refused(case, headers)
        return
    response = case.call(headers=headers)
    case.validate_response(response, checks=[not_a_server_error])
    _assert_json_error(response)
    if variant == "long url":
        assert response.status_code == 414
