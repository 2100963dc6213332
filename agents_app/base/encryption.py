"""AES-256-GCM encryption for env values, with a keyring independent of SECRET_KEY.

``STUDIO_ENCRYPTION_KEYS`` = ``id:base64key[,id:base64key…]``, newest first. New
ciphertexts use the first key; each ciphertext names the key that made it
(``v1:<id>:<base64 nonce‖ciphertext‖tag>``), so an old key keeps decrypting until
``manage.py reencrypt_env`` has moved everything to the newest key.
"""

from __future__ import annotations

import base64
import binascii
import os
from functools import lru_cache

from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

_AAD = b"standard-agents-env-v1"


class DecryptionError(Exception):
    """A ciphertext that no configured key opens (missing key or tampered data)."""


@lru_cache(maxsize=8)
def _parse_keyring(raw: str) -> tuple[tuple[str, bytes], ...]:
    keys: list[tuple[str, bytes]] = []
    for item in (p.strip() for p in raw.split(",") if p.strip()):
        key_id, sep, b64 = item.partition(":")
        if not sep or not key_id:
            raise ImproperlyConfigured(
                "STUDIO_ENCRYPTION_KEYS entries must look like 'id:base64key'."
            )
        try:
            key = base64.urlsafe_b64decode(b64 + "=" * (-len(b64) % 4))
        except (binascii.Error, ValueError) as exc:
            raise ImproperlyConfigured(f"Encryption key '{key_id}' is not valid base64.") from exc
        if len(key) != 32:
            raise ImproperlyConfigured(f"Encryption key '{key_id}' must be 32 bytes (AES-256).")
        keys.append((key_id, key))
    if not keys:
        raise ImproperlyConfigured(
            "STUDIO_ENCRYPTION_KEYS is empty: env values cannot be encrypted."
        )
    return tuple(keys)


def keyring() -> tuple[tuple[str, bytes], ...]:
    return _parse_keyring(settings.STUDIO_ENCRYPTION_KEYS)


def current_key_id() -> str:
    return keyring()[0][0]


def encrypt(plaintext: str) -> str:
    key_id, key = keyring()[0]
    nonce = os.urandom(12)
    sealed = AESGCM(key).encrypt(nonce, plaintext.encode("utf-8"), _AAD)
    return f"v1:{key_id}:{base64.b64encode(nonce + sealed).decode('ascii')}"


def key_id_of(ciphertext: str) -> str:
    parts = ciphertext.split(":", 2)
    return parts[1] if len(parts) == 3 else ""


def decrypt(ciphertext: str) -> str:
    try:
        version, key_id, b64 = ciphertext.split(":", 2)
    except ValueError as exc:
        raise DecryptionError("Unrecognised ciphertext format.") from exc
    keys = dict(keyring())
    if version != "v1" or key_id not in keys:
        raise DecryptionError(
            f"Env value was encrypted with key '{key_id}', which is not in STUDIO_ENCRYPTION_KEYS."
        )
    blob = base64.b64decode(b64)
    try:
        return AESGCM(keys[key_id]).decrypt(blob[:12], blob[12:], _AAD).decode("utf-8")
    except Exception as exc:  # InvalidTag: wrong key or tampering
        raise DecryptionError("Env value could not be decrypted (tampered or wrong key).") from exc
