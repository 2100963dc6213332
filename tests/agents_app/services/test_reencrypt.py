"""``manage.py reencrypt_env``: rotate by prepending a key, re-encrypt, drop the old key."""

from __future__ import annotations

import base64
import os
from io import StringIO
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.core.management import CommandError, call_command
from django.test import override_settings

from agents_app.base.encryption import key_id_of
from agents_app.bridge.store import DjangoStore
from agents_app.models import EnvValue, ThreadValue
from agents_app.orchestration.thread_creation import thread_create
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)
from tests.agents_app.api.api_support import define_agent

pytestmark = pytest.mark.django_db


def _key() -> str:
    return base64.urlsafe_b64encode(os.urandom(32)).decode()


OLD = f"old:{_key()}"
NEW = f"new:{_key()}"


def _plant(key: str, value: str) -> EnvValue:
    row = EnvValue(scope=EnvValue.Scope.INSTANCE, key=key)
    row.value = value
    row.save()
    return row


def _run() -> str:
    out = StringIO()
    call_command("reencrypt_env", stdout=out)
    return out.getvalue()


def test_rotate_reencrypt_and_drop_the_old_key() -> None:
    with override_settings(STUDIO_ENCRYPTION_KEYS=OLD):
        _plant("A", "alpha-value")
        _plant("B", "beta-value")
    with override_settings(STUDIO_ENCRYPTION_KEYS=f"{NEW},{OLD}"):
        _plant("C", "gamma-value")
        out = _run()
        assert "2 env value(s) re-encrypted with key 'new', 1 already current, 3 in total" in out
        assert "0 env value(s) re-encrypted" in _run()  # idempotent
    with override_settings(STUDIO_ENCRYPTION_KEYS=NEW):
        values = {r.key: r.value for r in EnvValue.objects.all()}
        assert values == {"A": "alpha-value", "B": "beta-value", "C": "gamma-value"}
        assert {key_id_of(r.ciphertext) for r in EnvValue.objects.all()} == {"new"}


def test_missing_key_fails_naming_the_value_and_changes_nothing() -> None:
    with override_settings(STUDIO_ENCRYPTION_KEYS=OLD):
        _plant("LOST", "lost-value")
    with override_settings(STUDIO_ENCRYPTION_KEYS=NEW):
        _plant("KEPT", "kept-value")
    before = dict(EnvValue.objects.values_list("key", "ciphertext"))
    newer = override_settings(STUDIO_ENCRYPTION_KEYS=f"newer:{_key()},{NEW}")
    with newer, pytest.raises(CommandError) as caught:
        _run()
    message = str(caught.value)
    assert "instance:LOST (key 'old')" in message and "KEPT" not in message
    assert "lost-value" not in message
    assert dict(EnvValue.objects.values_list("key", "ciphertext")) == before


def test_a_thread_value_sealed_by_set_value_is_reencrypted_and_still_read_exactly(
    alice: Any,
) -> None:
    """A setValue value that held a secret is kept sealed with the env keyring: rotation moves
    it to the newest key too, so getValue still returns it once the old key is gone."""
    define_agent("helper")
    thread = thread_create(user=alice, agent_name="helper")
    with override_settings(STUDIO_ENCRYPTION_KEYS=OLD):
        async_to_sync(DjangoStore().set_value)(
            str(thread.pk), "k", {"t": "[REDACTED]"}, {"t": "the-secret"}
        )
    with override_settings(STUDIO_ENCRYPTION_KEYS=f"{NEW},{OLD}"):
        assert "1 env value(s) re-encrypted with key 'new'" in _run()
    with override_settings(STUDIO_ENCRYPTION_KEYS=NEW):
        assert async_to_sync(DjangoStore().get_value)(str(thread.pk), "k") == {"t": "the-secret"}
        assert key_id_of(ThreadValue.objects.get(key="k").sealed) == "new"


def test_a_schedules_env_values_are_reencrypted_and_still_reach_its_runs(alice: Any) -> None:
    """Issue #52: a schedule's env values are sealed with the env keyring, so rotation moves
    them to the newest key and the old key can go."""
    from agents_app.models import Schedule
    from agents_app.services.automation import schedules

    define_agent("helper")
    with override_settings(STUDIO_ENCRYPTION_KEYS=OLD):
        schedules.schedule_create(
            owner=alice,
            agent_name="helper",
            message="hi",
            interval_seconds=3600,
            env={"REPORT_TOKEN": "report-secret"},
        )
    with override_settings(STUDIO_ENCRYPTION_KEYS=f"{NEW},{OLD}"):
        assert "1 env value(s) re-encrypted with key 'new'" in _run()
    with override_settings(STUDIO_ENCRYPTION_KEYS=NEW):
        row = Schedule.objects.get()
        assert row.env == {"REPORT_TOKEN": "report-secret"}
        assert key_id_of(row.env_ciphertext) == "new"
