"""The first-party OpenAI-compatible vendors (spec 0.2.0 ``SRC/providers/catalog.ts``).

Each is a ``define_provider`` definition like a user's. Base URLs are each vendor's
documented OpenAI-compatible base (checked 2026-12-06):

- groq: https://console.groq.com/docs/openai
- xai: https://docs.x.ai/docs/api-reference (``https://api.x.ai/v1``)
- cerebras: https://inference-docs.cerebras.ai/resources/openai (``https://api.cerebras.ai/v1``)
- deepinfra: https://deepinfra.com/docs/advanced/openai_api (``/v1/openai``, not ``/v1``)
- novita: https://novita.ai/docs/guides/llm-api (``/v3/openai``)
- cloudflare (Workers AI):
  https://developers.cloudflare.com/workers-ai/configuration/open-ai-compatibility
  (the account id is part of the path: a config slot)

Key names are the reference's (reference-behavior.md §5.3).
"""

from __future__ import annotations

import dataclasses

from runtime.providers.compatible.definition import ProviderDefinition, define_provider


def _vendor(
    name: str, label: str, base_url: str, key_env: str, **options: object
) -> ProviderDefinition:
    made = define_provider(
        name=name,
        label=label,
        base_url=base_url,
        api_key={"default_env": key_env, "required": True, "description": f"{label} API key"},
        **options,  # type: ignore[arg-type]
    )
    return dataclasses.replace(made, builtin=True, origin="runtime.providers.compatible.builtin")


BUILTIN: dict[str, ProviderDefinition] = {
    d.name: d
    for d in (
        _vendor("groq", "Groq", "https://api.groq.com/openai/v1", "GROQ_API_KEY"),
        _vendor("xai", "xAI", "https://api.x.ai/v1", "XAI_API_KEY"),
        _vendor("cerebras", "Cerebras", "https://api.cerebras.ai/v1", "CEREBRAS_API_KEY"),
        _vendor(
            "deepinfra", "DeepInfra", "https://api.deepinfra.com/v1/openai", "DEEPINFRA_API_KEY"
        ),
        _vendor("novita", "Novita AI", "https://api.novita.ai/v3/openai", "NOVITA_API_KEY"),
        _vendor(
            "cloudflare",
            "Cloudflare Workers AI",
            "https://api.cloudflare.com/client/v4/accounts/{account_id}/ai/v1",
            "CLOUDFLARE_API_TOKEN",
            config={
                "account_id": {
                    "type": "text",
                    "default_env": "CLOUDFLARE_ACCOUNT_ID",
                    "required": True,
                    "description": "The Cloudflare account id (part of the Workers AI URL).",
                }
            },
        ),
    )
}
