"""``registry.sync_defined`` runs at every engine build (each session start): a compatible
provider it already has is skipped (its definition is frozen, so its key name and hosts were
taken when it came: issue #58), and a definition replaced under the same name is taken anew."""

from __future__ import annotations

from runtime.core import egress
from runtime.providers.compatible.definition import ProviderDefinition, define_provider
from runtime.providers.registry import ADAPTERS, KEY_NAMES, define, sync_defined, undefine


def _acme(key_env: str, host: str) -> ProviderDefinition:
    return define_provider(
        name="acme_sync",
        base_url=f"https://{host}/v1",
        api_key={"default_env": key_env},
        hosts=[host],
    )


def test_a_known_definition_is_kept_and_a_replaced_one_taken_anew() -> None:
    try:
        first = define(_acme("ACME_ONE_KEY", "one.acme.example"))
        adapter = ADAPTERS["acme_sync"]
        sync_defined()
        sync_defined()
        assert ADAPTERS["acme_sync"] is adapter
        assert getattr(adapter, "definition", None) is first
        assert KEY_NAMES["acme_sync"] == "ACME_ONE_KEY"
        define(_acme("ACME_TWO_KEY", "two.acme.example"))
        assert ADAPTERS["acme_sync"] is not adapter
        assert KEY_NAMES["acme_sync"] == "ACME_TWO_KEY"
        assert egress.is_official_host("acme_sync", "https://two.acme.example/v1")
    finally:
        undefine("acme_sync")
    assert "acme_sync" not in ADAPTERS and "acme_sync" not in KEY_NAMES
