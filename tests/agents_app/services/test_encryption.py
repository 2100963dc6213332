"""Env values are AES-256-GCM encrypted at rest and name the key that sealed them."""

from __future__ import annotations

import base64
import os

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from agents_app.base.encryption import DecryptionError, decrypt, encrypt, key_id_of
from agents_app.models import EnvValue


def _key() -> str:
    return base64.urlsafe_b64encode(os.urandom(32)).decode()


def test_ciphertext_names_its_key_and_round_trips() -> None:
    with override_settings(STUDIO_ENCRYPTION_KEYS=f"new:{_key()}"):
        sealed = encrypt("sk-live-123")
        assert key_id_of(sealed) == "new"
        assert "sk-live-123" not in sealed
        assert decrypt(sealed) == "sk-live-123"


def test_same_plaintext_encrypts_differently_each_time() -> None:
    assert encrypt("same") != encrypt("same")


def test_old_key_still_decrypts_after_a_new_key_is_prepended() -> None:
    old = f"old:{_key()}"
    with override_settings(STUDIO_ENCRYPTION_KEYS=old):
        sealed = encrypt("value")
    with override_settings(STUDIO_ENCRYPTION_KEYS=f"new:{_key()},{old}"):
        assert decrypt(sealed) == "value"
        assert key_id_of(encrypt("value")) == "new"


def test_missing_key_is_a_clear_error_not_garbage() -> None:
    with override_settings(STUDIO_ENCRYPTION_KEYS=f"gone:{_key()}"):
        sealed = encrypt("value")
    with (
        override_settings(STUDIO_ENCRYPTION_KEYS=f"other:{_key()}"),
        pytest.raises(DecryptionError, match="gone"),
    ):
        decrypt(sealed)


def test_tampered_ciphertext_is_rejected() -> None:
    sealed = encrypt("value")
    head, b64 = sealed.rsplit(":", 1)
    raw = bytearray(base64.b64decode(b64))
    raw[-1] ^= 1
    with pytest.raises(DecryptionError):
        decrypt(f"{head}:{base64.b64encode(bytes(raw)).decode()}")


@pytest.mark.parametrize(
    "bad", ["", "nocolon", "k:not-base64!!", f"k:{base64.urlsafe_b64encode(b'short').decode()}"]
)
def test_malformed_keyring_is_reported_at_use(bad: str) -> None:
    with override_settings(STUDIO_ENCRYPTION_KEYS=bad), pytest.raises(ImproperlyConfigured):
        encrypt("x")


@pytest.mark.django_db
def test_env_value_column_holds_only_ciphertext() -> None:
    row = EnvValue(scope=EnvValue.Scope.INSTANCE, key="OPENAI_API_KEY")
    row.value = "sk-canary-4242"
    row.save()
    stored = EnvValue.objects.values_list("ciphertext", flat=True).get(pk=row.pk)
    assert "sk-canary-4242" not in stored
    assert EnvValue.objects.get(pk=row.pk).value == "sk-canary-4242"
