"""The egress policy on outbound webhooks (issue #36: every outbound URL the platform connects
to on a user's behalf): a receiver URL is checked after DNS when it is saved and again when
each delivery is sent (a name may move), with the same allow-list as model base URLs and MCP
servers; the old webhook-only switch is refused, not silently ignored.

Each test runs a real local receiver and asserts what it received."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from agents_app.base.errors import Invalid
from agents_app.models import EnvValue, Thread, WebhookDelivery
from agents_app.orchestration import webhook_runner
from agents_app.services.automation import webhooks
from runtime.core import egress
from tests.agents_app.api.api_support import define_agent
from tests.agents_app.services.test_egress import Listener

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def receiver() -> Iterator[Listener]:
    server = Listener(status=200)
    yield server
    server.close()


def _subscribe(url: str) -> None:
    row = EnvValue(scope=EnvValue.Scope.INSTANCE, key="HOOK_SECRET")
    row.value = "hook-secret-0123456789"
    row.save()
    define_agent("helper")
    owner = get_user_model().objects.create_user("hooky")
    webhooks.subscription_create(
        owner=owner,
        url=url,
        secret_env="HOOK_SECRET",
        events=["session.failed"],
        agent_name="helper",
    )


@pytest.mark.django_db
@pytest.mark.parametrize(
    "url",
    [
        "http://localhost:9/hook",  # a name: only resolving it shows it is loopback
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.7/hook",
        "http://[::1]:9/hook",
    ],
)
def test_webhook_url_refused_by_the_egress_policy_after_dns(url: str) -> None:
    egress.configure([])
    with pytest.raises(Invalid, match="egress policy"):
        _subscribe(url)


@pytest.mark.django_db
def test_webhook_url_allowed_when_the_operator_lists_it(receiver: Listener) -> None:
    egress.configure(["localhost"])
    _subscribe(f"http://localhost:{receiver.port}/hook")


@pytest.mark.django_db
def test_webhook_delivery_checked_again_when_sent(receiver: Listener) -> None:
    # Saved while the operator allowed it; the allow-list has since been narrowed.
    egress.configure(["localhost"])
    _subscribe(f"http://localhost:{receiver.port}/hook")
    subscription = webhooks.WebhookSubscription.objects.get()
    # An event of a thread the subscription's owner may read (theirs).
    thread = Thread.objects.create(
        agent_id=subscription.agent_id,
        origin_agent_id=subscription.agent_id,
        owner=subscription.owner,
    )
    [delivery_id] = webhooks.record_event(
        subscription.agent_id, "session.failed", "s1", {"ok": False, "threadId": str(thread.pk)}
    )
    egress.configure([])
    webhook_runner.deliver(delivery_id)
    assert receiver.received == []
    row = WebhookDelivery.objects.get(pk=delivery_id)
    assert row.response_code is None and "egress policy" in row.error
    # Allowed again: the next attempt (made due now) arrives.
    egress.configure(["localhost"])
    WebhookDelivery.objects.filter(pk=delivery_id).update(next_attempt_at=timezone.now())
    webhook_runner.deliver(delivery_id)
    assert [path for path, _ in receiver.received] == ["/hook"]


def test_sync_client_refuses_a_redirect_to_a_private_address() -> None:
    target = Listener(status=200)
    hop = Listener(location=f"http://127.0.0.1:{target.port}/stolen")
    try:
        policy = egress.EgressPolicy.from_allow_list(["localhost"])
        with (
            egress.sync_client(policy, follow_redirects=True) as client,
            pytest.raises(egress.EgressRefused),
        ):
            client.get(f"http://localhost:{hop.port}/start")
        assert [path for path, _ in hop.received] == ["/start"]
        assert target.received == []
    finally:
        hop.close()
        target.close()


def test_the_old_webhook_switch_is_refused_not_ignored() -> None:
    env = {**os.environ, "STUDIO_WEBHOOK_ALLOW_PRIVATE": "1", "PYTHONPATH": str(ROOT)}
    env["DJANGO_SETTINGS_MODULE"] = "studio.settings"
    done = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "STUDIO_EGRESS_ALLOW" in done.stderr


@pytest.mark.django_db
def test_discovery_says_the_egress_policy_refused_a_loopback_base_url(
    receiver: Listener, make_user: Any
) -> None:
    from agents_app.services.definitions import model_catalog

    egress.configure([])
    own = EnvValue(scope="user", user=make_user("ops", staff=True), key="OPENAI_API_KEY")
    own.value = "sk-ops-own-key"
    own.save()
    result = model_catalog.check_connection(
        "openai",
        "gpt-4o-mini",
        user=own.user,
        base_url=f"http://localhost:{receiver.port}/v1",
    )
    assert not result["ok"]
    assert result["message"].startswith("Did not connect to OpenAI at http://localhost:")
    assert "egress policy" in result["message"] and "STUDIO_EGRESS_ALLOW" in result["message"]
    assert receiver.received == []
