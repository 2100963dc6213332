"""What a trigger's sender may post (issue #52): a JSON body only (415 otherwise, so a form
on another site cannot fire it), bounded in depth and size, with text PostgreSQL can store;
and signature headers that are garbage are a 401. Every refusal is a 4xx with a sentence
given before anything is created: no thread is left behind (docs/automation.md,
"Triggers")."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agents_app.models import Thread, Trigger
from agents_app.services.threads.messages import CONTENT_MAX
from tests.agents_app.api.api_support import ApiClient, _api_hosts, client_for, define_agent  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)


def _trigger(user: Any, template: str = "Order {{ id }}", **body: Any) -> str:
    define_agent("helper")
    created = client_for(user).post_json(
        "/api/triggers", {"agent": "helper", "template": template, **body}
    )
    assert created.status_code == 201, created.content
    return str(created.json()["path"])


def _post(path: str, body: bytes | str, content_type: str = "application/json", **kw: Any) -> Any:
    return ApiClient().generic("POST", path, body, content_type=content_type, **kw)


def _refused(response: Any, status: int, words: str) -> None:
    """A ``status`` answer in JSON whose sentence says ``words``, and nothing was created."""
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith("application/json")
    assert words in response.json()["error"], response.json()
    assert Thread.objects.count() == 0
    assert Trigger.objects.filter(last_used_at__isnull=False).count() == 0


@pytest.mark.parametrize(
    ("content_type", "body"),
    [
        ("text/plain", '{"id": 7}'),  # what a cross-site <form enctype="text/plain"> sends
        ("application/x-www-form-urlencoded", "id=7"),
        (
            "multipart/form-data; boundary=XX",
            '--XX\r\nContent-Disposition: form-data; name="id"\r\n\r\n7\r\n--XX--\r\n',
        ),
        ("", '{"id": 7}'),  # no Content-Type at all
        ("application/jsonp", '{"id": 7}'),
    ],
)
def test_a_body_that_is_not_declared_json_is_a_415_and_starts_nothing(
    admin_user: Any, content_type: str, body: str
) -> None:
    path = _trigger(admin_user)
    _refused(_post(path, body, content_type), 415, "send it with Content-Type: application/json")


def test_a_form_post_from_the_test_client_is_a_415(admin_user: Any) -> None:
    # Django's client encodes a dict as real multipart/form-data, as a browser form would.
    path = _trigger(admin_user)
    _refused(ApiClient().post(path, {"id": "7"}), 415, "Content-Type: application/json")


@pytest.mark.parametrize("content_type", ["application/json; charset=utf-8", "Application/JSON"])
def test_json_with_parameters_or_in_any_case_fires(admin_user: Any, content_type: str) -> None:
    path = _trigger(admin_user)
    fired = _post(path, '{"id": 7}', content_type)
    assert fired.status_code == 202, fired.content
    assert Thread.objects.count() == 1


def test_a_body_nested_100000_deep_is_a_400_not_a_crash(admin_user: Any) -> None:
    path = _trigger(admin_user)
    deep = "[" * 100_000 + "]" * 100_000
    _refused(_post(path, deep), 400, "nested deeper than 64 levels")
    deep_object = '{"a":' * 100_000 + "1" + "}" * 100_000
    _refused(_post(path, deep_object), 400, "nested deeper than 64 levels")


def test_the_depth_limit_is_64_levels(admin_user: Any) -> None:
    path = _trigger(admin_user)

    def body(depth: int) -> str:  # the object itself is level 1
        return '{"id": 7, "deep": ' + "[" * (depth - 1) + "]" * (depth - 1) + "}"

    _refused(_post(path, body(65)), 400, "nested deeper than 64 levels")
    assert _post(path, body(64)).status_code == 202


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ('{"id": "7\\u0000; DROP"}', "'id': Text may not contain NUL"),
        ('{"id": "\\ud800"}', "'id': Text may not contain lone UTF-16 surrogates"),
        # A surrogate as raw bytes: json.loads decodes them ("surrogatepass") to the same str.
        (b'{"id": "\xed\xa0\x80"}', "'id': Text may not contain lone UTF-16 surrogates"),
        (b'{"id": "\xff"}', "The body must be JSON in UTF-8"),
        ('{"id": 7', "The body must be JSON in UTF-8"),
    ],
)
def test_text_postgresql_cannot_store_is_a_400_before_the_thread_exists(
    admin_user: Any, body: str | bytes, words: str
) -> None:
    path = _trigger(admin_user)
    _refused(_post(path, body), 400, words)


def test_unstorable_text_in_a_field_the_template_does_not_use_is_no_reason_to_refuse(
    admin_user: Any,
) -> None:
    # Nothing but the message is stored; a sender's unrelated field does not cost the event.
    path = _trigger(admin_user)
    fired = _post(path, '{"id": 7, "note": "a\\u0000b \\ud800"}')
    assert fired.status_code == 202, fired.content


def test_a_message_longer_than_a_message_may_be_is_a_400_before_the_thread_exists(
    admin_user: Any,
) -> None:
    path = _trigger(admin_user, template="Note: {{ text }}")
    too_long = json.dumps({"text": "x" * CONTENT_MAX})
    _refused(_post(path, too_long), 400, f"longer than {CONTENT_MAX} characters")
    # A short field repeated by the template: stopped as the message grows past the limit.
    Trigger.objects.all().delete()
    path = _trigger(admin_user, template="{{ text }}" * 5_000)
    _refused(_post(path, json.dumps({"text": "y" * 1_000})), 400, "longer than")


def test_a_message_that_renders_empty_is_a_400_before_the_thread_exists(admin_user: Any) -> None:
    path = _trigger(admin_user, template="{{ text }}")
    _refused(_post(path, '{"text": "  \\n "}'), 400, "is empty")


def test_a_body_over_the_upload_limit_is_a_413(admin_user: Any, settings: Any) -> None:
    path = _trigger(admin_user)
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1024
    _refused(_post(path, json.dumps({"id": 7, "pad": "z" * 2048})), 413, "too large")
    assert _post(path, '{"id": 7}').status_code == 202


@pytest.mark.parametrize(
    "headers",
    [
        {"HTTP_WEBHOOK_TIMESTAMP": "²"},  # str.isdigit() says yes, int() says no
        {"HTTP_WEBHOOK_TIMESTAMP": "9" * 5000},  # past int()'s digit limit
        {"HTTP_WEBHOOK_TIMESTAMP": "NOW", "HTTP_WEBHOOK_SIGNATURE": "v1=é"},
        {"HTTP_WEBHOOK_SIGNATURE": "v1=\u00e9\u00e9"},  # non-ASCII: compare_digest's TypeError
    ],
)
def test_garbage_signature_headers_are_a_401_not_a_crash(
    admin_user: Any, headers: dict[str, str]
) -> None:
    from agents_app.models import EnvValue

    row = EnvValue(scope=EnvValue.Scope.INSTANCE, key="SENDER_SECRET")
    row.value = "s3cret-sender"
    row.save()
    path = _trigger(admin_user, secretEnv="SENDER_SECRET")
    if "HTTP_WEBHOOK_TIMESTAMP" not in headers:
        import time

        headers = {**headers, "HTTP_WEBHOOK_TIMESTAMP": str(int(time.time()))}
    _refused(_post(path, '{"id": 7}', **headers), 401, "Webhook-")
