"""API keys: shown once, stored as a SHA-256 hash, revocable; the create_api_key command."""

from __future__ import annotations

import hashlib
import io
import re
from datetime import timedelta
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from agents_app.models import ApiKey
from agents_app.services.access.api_keys import (
    ApiKeyNameInvalid,
    api_key_authenticate,
    api_key_create,
    api_key_revoke,
)

KEY_RE = re.compile(r"^agtbldr_[0-9a-f]{64}$")


def test_a_new_key_has_the_reference_format_and_only_its_hash_is_stored(alice: Any) -> None:
    key, raw = api_key_create(user=alice, name="laptop")
    assert KEY_RE.match(raw)
    key.refresh_from_db()
    assert key.key_hash == hashlib.sha256(raw.encode()).hexdigest()
    assert key.last_five == raw[-5:]
    assert key.key_prefix == "agtbldr_"
    assert raw not in {str(v) for v in ApiKey.objects.values_list()[0]}


def test_every_key_is_different(alice: Any) -> None:
    raws = {api_key_create(user=alice, name=f"k{i}")[1] for i in range(5)}
    assert len(raws) == 5


@pytest.mark.parametrize("name", ["", "   ", "x" * 101])
def test_key_name_is_1_to_100_characters(alice: Any, name: str) -> None:
    with pytest.raises(ApiKeyNameInvalid):
        api_key_create(user=alice, name=name)
    assert not ApiKey.objects.exists()


def test_the_key_authenticates_its_owner_and_records_the_use(alice: Any) -> None:
    key, raw = api_key_create(user=alice, name="ci")
    assert api_key_authenticate(raw) == alice
    key.refresh_from_db()
    assert key.last_used_at is not None


def test_last_used_is_written_at_most_once_a_minute(alice: Any) -> None:
    key, raw = api_key_create(user=alice, name="ci")
    api_key_authenticate(raw)
    key.refresh_from_db()
    first = key.last_used_at
    api_key_authenticate(raw)
    key.refresh_from_db()
    assert key.last_used_at == first

    ApiKey.objects.filter(pk=key.pk).update(last_used_at=timezone.now() - timedelta(minutes=5))
    api_key_authenticate(raw)
    key.refresh_from_db()
    assert key.last_used_at is not None and key.last_used_at > timezone.now() - timedelta(minutes=1)


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "agtbldr_",
        "agtbldr_" + "0" * 64,
        "Bearer agtbldr_" + "0" * 64,
        "sk-" + "0" * 69,
        None,
    ],
)
def test_unknown_or_malformed_keys_do_not_authenticate(alice: Any, raw: Any) -> None:
    api_key_create(user=alice, name="ci")
    assert api_key_authenticate(raw) is None


def test_a_key_differing_in_one_character_does_not_authenticate(alice: Any) -> None:
    _, raw = api_key_create(user=alice, name="ci")
    flipped = raw[:-1] + ("0" if raw[-1] != "0" else "1")
    assert api_key_authenticate(flipped) is None


def test_revoked_keys_do_not_authenticate(alice: Any) -> None:
    key, raw = api_key_create(user=alice, name="ci")
    api_key_revoke(api_key=key)
    assert api_key_authenticate(raw) is None
    revoked_at = key.revoked_at
    api_key_revoke(api_key=key)
    assert key.revoked_at == revoked_at


def test_keys_of_deactivated_users_do_not_authenticate(alice: Any) -> None:
    _, raw = api_key_create(user=alice, name="ci")
    alice.is_active = False
    alice.save()
    assert api_key_authenticate(raw) is None


def test_create_api_key_prints_the_key_once(alice: Any) -> None:
    out, err = io.StringIO(), io.StringIO()
    call_command("create_api_key", "alice", "--name", "deploy bot", stdout=out, stderr=err)
    raw = out.getvalue().strip()
    assert KEY_RE.match(raw)
    assert "cannot be shown again" in err.getvalue()
    key = ApiKey.objects.get()
    assert (key.user, key.name, key.last_five) == (alice, "deploy bot", raw[-5:])
    assert api_key_authenticate(raw) == alice


def test_create_api_key_has_a_default_name(alice: Any) -> None:
    call_command("create_api_key", "alice", stdout=io.StringIO(), stderr=io.StringIO())
    assert ApiKey.objects.get().name


def test_create_api_key_for_an_unknown_user_is_a_clear_error(db: Any) -> None:
    with pytest.raises(CommandError, match="There is no user named 'mallory'."):
        call_command("create_api_key", "mallory", stdout=io.StringIO(), stderr=io.StringIO())
    assert not ApiKey.objects.exists()


def test_create_api_key_rejects_a_bad_name(alice: Any) -> None:
    with pytest.raises(CommandError, match="1 to 100 characters"):
        call_command("create_api_key", "alice", "--name", " ", stdout=io.StringIO())
