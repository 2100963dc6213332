"""Property-based requests over the whole OpenAPI schema: no input may cause a 5xx.

Schemathesis generates requests from ``/api/openapi.json`` and sends them to the
WSGI app as staff (every route is reachable); ``thread_id`` path parameters point
at a real thread so the handlers behind the access check are exercised too. The
number of examples per operation is bounded so the whole file runs in about a
minute.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error

from agents_app.services.api_keys import api_key_create
from studio.wsgi import application
from tests.agents_app.api_support import _api_hosts, define_agent  # noqa: F401

schema = schemathesis.openapi.from_wsgi("/api/openapi.json", application)
MAX_EXAMPLES = int(os.environ.get("API_FUZZ_EXAMPLES", "20"))


@pytest.fixture
def keep_connection() -> Any:
    """Keep the test's DB connection across requests, as Django's test client does (the
    raw WSGI app closes it at the end of every request, which would end the test's
    transaction)."""
    from django.core.signals import request_finished, request_started
    from django.db import close_old_connections

    for signal in (request_started, request_finished):
        signal.disconnect(close_old_connections)
    yield
    for signal in (request_started, request_finished):
        signal.connect(close_old_connections)


@pytest.fixture
def staff_setup(db: Any, make_user: Any, keep_connection: Any) -> dict[str, str]:
    from agents_app.thread_creation import thread_create

    define_agent("helper")
    staff = make_user("fuzz-ops", staff=True)
    _, raw = api_key_create(user=staff, name="fuzz")
    thread = thread_create(user=staff, agent_name="helper")
    return {"key": raw, "thread_id": str(thread.pk)}


@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    derandomize=True,
)
def test_no_request_makes_the_api_fail(case: Any, staff_setup: dict[str, str]) -> None:
    if case.path_parameters and "thread_id" in case.path_parameters:
        case.path_parameters["thread_id"] = staff_setup["thread_id"]
    response = case.call(headers={"Authorization": f"Bearer {staff_setup['key']}"})
    case.validate_response(response, checks=[not_a_server_error])
