"""The cURL template of a model (``GET /api/models/{name}/curl-data``, the studio's "Copy
cURL"): the URL and headers our adapter would send, the key as a shell variable.

The adapter builds the request (no credentials: ``build_request`` never carries them)
and its ``auth_headers`` get a marker where the key goes, written ``"${OPENAI_API_KEY}"``;
every other part (method, URL, each header) is single-quoted, so pasting the command
expands nothing else, whatever a base URL holds (issue #36 item 4; base URLs are also
refused at save when they hold shell syntax, ``runtime.definitions.validation.base_url_errors``).
As a second guard every key value we hold for the provider (instance env values, the
process environment) is replaced by ``${OPENAI_API_KEY}``, raw and URL-encoded, should
a base URL carry one: inside single quotes, a visible mark that expands to nothing.
The body is the log's request body, piped in (``@-``).
"""

from __future__ import annotations

import os
import re
import shlex
from urllib.parse import quote

from agents_app.base.errors import Invalid, NotFound
from agents_app.models import EnvValue, LanguageModel
from agents_app.services.definitions import rows as defs
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
    key_env = adapter_class.key_env
    if not _ENV_NAME.fullmatch(key_env):  # it goes into the command unquoted
        raise Invalid(f"Model {name}: the provider's key name {key_env!r} is not a shell name")
    placeholder = "${" + key_env + "}"
    adapter = adapter_class(None, _KEY, definition.base_url, stream=False)  # type: ignore[arg-type]
    prepared = adapter.build_request(
        ProviderRequest(model=definition.model, system="", messages=[], model_name=name),
        stream=False,
    )
    known = _known_values(key_env)
    headers = {**prepared.headers, **adapter.auth_headers(_KEY)}
    method = _redacted(prepared.method, known, placeholder)
    url = _redacted(prepared.url, known, placeholder)
    lines = [f"curl -i -sS -X {shell_word(method)} {shell_word(url)} \\"]
    for k, v in headers.items():
        header = _redacted(f"{k}: {v}", known, placeholder)
        lines.append(f"  -H {shell_word(header, key_env)} \\")
    lines.append("  --data-binary @-")
    return "\n".join(lines)


# Where the adapter puts the key: the one spot of the command the shell expands.
_KEY = "\x00KEY\x00"
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def shell_word(text: str, key_env: str | None = None) -> str:
    """``text`` as one shell word that expands nothing: single-quoted (``shlex.quote``),
    except the adapter's key spot, which becomes ``"${KEY_ENV}"`` (the one expansion the
    reader wants, of a variable name we chose). Whatever a base URL or header holds,
    ``$``, backticks and quotes included, reaches curl as written."""
    if key_env is None or _KEY not in text:
        return shlex.quote(text.replace(_KEY, ""))
    variable = '"${' + key_env + '}"'
    return variable.join(shlex.quote(part) if part else "" for part in text.split(_KEY))
