"""Key rotation for env values: move every ciphertext to the newest key of the keyring."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from agents_app.base.encryption import current_key_id, decrypt, encrypt, key_id_of, keyring
from agents_app.models import CredentialGrant, EnvValue, Schedule, ThreadValue


class MissingKeys(Exception):
    """Some env values were encrypted with keys that are no longer configured."""

    def __init__(self, values: list[str]) -> None:
        self.values = values
        super().__init__(
            "These env values use a key missing from STUDIO_ENCRYPTION_KEYS (nothing was "
            "changed): " + ", ".join(values)
        )


@dataclass(frozen=True, slots=True)
class ReencryptReport:
    total: int
    reencrypted: int
    already_current: int
    key_id: str


def _label(row: EnvValue) -> str:
    owner = row.thread_id or row.agent_id or row.prompt_id or row.user_id or ""
    where = f"{row.scope}:{owner}" if owner else row.scope
    return f"{where}:{row.key} (key '{key_id_of(row.ciphertext)}')"


@transaction.atomic
def env_reencrypt() -> ReencryptReport:
    """Re-encrypt every ``EnvValue`` not yet under the newest key; idempotent.

    All or nothing: rows are locked, and if any row's key is missing the
    transaction changes nothing and ``MissingKeys`` names each such value
    (scope, owner, key name; never a value).
    """
    newest = current_key_id()
    known = {key_id for key_id, _ in keyring()}
    rows = list(EnvValue.objects.select_for_update().order_by("pk"))
    # A thread value that held a secret keeps its exact form sealed with the same keyring.
    values = list(ThreadValue.objects.select_for_update().exclude(sealed="").order_by("pk"))
    # A schedule's run env values are sealed with the same keyring (issue #52).
    plans = list(Schedule.objects.select_for_update().exclude(env_ciphertext="").order_by("pk"))
    # Credential grants' secrets too (services/users/grants.py).
    grants = list(CredentialGrant.objects.select_for_update().order_by("pk"))
    missing = [_label(r) for r in rows if key_id_of(r.ciphertext) not in known]
    missing += [
        f"schedule:{p.pk} env (key '{key_id_of(p.env_ciphertext)}')"
        for p in plans
        if key_id_of(p.env_ciphertext) not in known
    ]
    missing += [
        f"value:{v.thread_id}:{v.key} (key '{key_id_of(v.sealed)}')"
        for v in values
        if key_id_of(v.sealed) not in known
    ]
    missing += [
        f"grant:{g.user_id or 'instance'}:{g.name} (key '{key_id_of(g.ciphertext)}')"
        for g in grants
        if key_id_of(g.ciphertext) not in known
    ]
    if missing:
        raise MissingKeys(missing)
    stale = [r for r in rows if key_id_of(r.ciphertext) != newest]
    for row in stale:
        row.ciphertext = encrypt(decrypt(row.ciphertext))
    stale_values = [v for v in values if key_id_of(v.sealed) != newest]
    for value in stale_values:
        value.sealed = encrypt(decrypt(value.sealed))
    stale_plans = [p for p in plans if key_id_of(p.env_ciphertext) != newest]
    for plan in stale_plans:
        plan.env_ciphertext = encrypt(decrypt(plan.env_ciphertext))
    stale_grants = [g for g in grants if key_id_of(g.ciphertext) != newest]
    for grant in stale_grants:
        grant.ciphertext = encrypt(decrypt(grant.ciphertext))
    # bulk_update leaves updated_at alone: rotation is not an edit of the value.
    EnvValue.objects.bulk_update(stale, ["ciphertext"], batch_size=500)
    ThreadValue.objects.bulk_update(stale_values, ["sealed"], batch_size=500)
    Schedule.objects.bulk_update(stale_plans, ["env_ciphertext"], batch_size=500)
    CredentialGrant.objects.bulk_update(stale_grants, ["ciphertext"], batch_size=500)
    total = len(rows) + len(values) + len(plans) + len(grants)
    changed = len(stale) + len(stale_values) + len(stale_plans) + len(stale_grants)
    return ReencryptReport(total, changed, total - changed, newest)
