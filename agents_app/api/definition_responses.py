"""Response schemas of the routes about definitions (agents, prompts, tools): what OpenAPI
shows for each answer. Built like agents_app.api.responses: keys passed through unchanged,
keys not declared kept, so the JSON stays the reference's wire format."""

from __future__ import annotations

from agents_app.api.responses import Objects, Out


class VariablesOut(Out):
    variables: Objects
