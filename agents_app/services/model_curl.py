"""The cURL template of a model (``GET /api/models/{name}/curl-data``, the studio's "Copy
cURL"): the URL and headers our adapter would send, the key as a shell variable.

The adapter builds the request (no credentials: ``build_request`` never carries them)
and its ``auth_headers`` get the placeholder ``${OPENAI_API_KEY}``, never a value. As a
second guard every key value we hold for the provider (instance env values, the
process environment) is replaced by the same placeholder, raw and URL-encoded, should
a base URL carry one. The body is the log's request body, piped in (``@-``).
"""

from __future__ import annotations

import os
import shlex
from urllib.parse import quote

from agents_app.errors import Invalid, NotFound
from agents_app.models import EnvValue, LanguageModel
from agents_app.services import definitions as defs
from runtime.providers.base import ProviderRequest
from runtime.providers.registry import ADAPTERS
from runtime.providers.registry import adapter_class as api_adapter


def _known_values(key_env: str) -> list[str]:
    values = [os.environ.get(key_env, "")]
    for row in EnvValue.objects.filter(key=key_env):
        try:
            values.append(row.value)
        except Exception:  # an undecryptable row holds nothing we could leak
            continue
    return [v for v in values if len(v) >= 4]


def _redacted(text: str, values: list[str], placeholder: str) -> str:
    for value in values:
        text = text.replace(value, placeholder).replace(quote(value, safe=""), placeholder)
    return text


def model_curl(name: str) -> str:
    """The shell command for the model ``name`` (``NotFound``; ``Invalid`` for ``test``)."""
    row = LanguageModel.objects.filter(name=name[:129]).first()
    if row is None:
        raise NotFound(f'Model "{name}" not found')
    definition = defs.model_definition(row)
    provider_class = ADAPTERS.get(definition.provider)
    if provider_class is None:
        raise Invalid(
            f"Model {name} uses the {definition.provider} provider, which sends no HTTP request"
        )
    # The URL the model really calls (OpenAI: Chat Completions or Responses).
    adapter_class = api_adapter(provider_class, definition)
    placeholder = "${" + adapter_class.key_env + "}"
    adapter = adapter_class(None, placeholder, definition.base_url, stream=False)  # type: ignore[arg-type]
    prepared = adapter.build_request(
        ProviderRequest(model=definition.model, system="", messages=[], model_name=name),
        stream=False,
    )
    headers = {**prepared.headers, **adapter.auth_headers(placeholder)}
    lines = [f"curl -i -sS -X {prepared.method} {_quoted(prepared.url)} \\"]
    lines += [f"  -H {_quoted(f'{k}: {v}')} \\" for k, v in headers.items()]
    lines.append("  --data-binary @-")
    return _redacted("\n".join(lines), _known_values(adapter_class.key_env), placeholder)


def _quoted(value: str) -> str:
    """Double quotes so ``${NAME}`` still expands in the user's shell; everything else that
    a shell would read inside double quotes is escaped."""
    if "${" not in value:
        return shlex.quote(value)
    head, _, rest = value.partition("${")
    name, _, tail = rest.partition("}")
    escape = str.maketrans({c: "\\" + c for c in '"\\`$'})
    return '"' + head.translate(escape) + "${" + name + "}" + tail.translate(escape) + '"'
