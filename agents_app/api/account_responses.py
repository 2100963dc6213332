"""Response schemas of the caller's own account routes: API keys and env variables.

Built like agents_app.api.responses (keys passed through unchanged, extra keys kept), so
OpenAPI names each answer's keys while the JSON stays the reference's wire format.
"""

from __future__ import annotations

from agents_app.api.responses import Int, IntOrNull, Objects, Out, Str


class ApiKeyOut(Out):
    id: Str
    name: Str
    key_prefix: Str
    last_five: Str
    source: Str
    created_at: Int
    last_used_at: IntOrNull


class ApiKeyListOut(Out):
    keys: list[ApiKeyOut]


class ApiKeyCreatedOut(Out):
    key: Str
    id: Str
    name: Str
    key_prefix: Str
    last_five: Str
    created_at: Int


class EnvVariablesOut(Out):
    variables: Objects
