"""``GET /api/variables/{agents,prompts,tools}/{name}``: the env values an agent (a prompt, a
code tool) needs and where each is set
(a minimal version of the reference's variable scan; see ``pages.variable_scan``)."""

from __future__ import annotations

from typing import Any

from ninja import Field, Query, Router, Schema

from agents_app import selectors
from agents_app.api.authed import AuthedRequest
from agents_app.api.definition_responses import VariablesOut
from agents_app.api.schemas import ERRORS
from agents_app.pages.variable_scan import agent_variables, prompt_variables, tool_variables

router = Router(tags=["catalog"])


class VariablesQuery(Schema):
    thread_id: str | None = Field(None, max_length=64)


def _who(request: AuthedRequest, params: VariablesQuery) -> tuple[Any, Any]:
    """Staff only; the caller and, when asked, a thread they may see (its values count)."""
    user = request.auth
    thread = selectors.access_thread(params.thread_id, user) if params.thread_id else None
    return user, thread


@router.get(
    "/variables/agents/{name}",
    response={200: VariablesOut, **ERRORS},
    summary="An agent's env needs",
)
def agent_variable_scan(
    request: AuthedRequest, name: str, params: Query[VariablesQuery]
) -> dict[str, Any]:
    return {"variables": agent_variables(name, *_who(request, params))}


@router.get(
    "/variables/prompts/{name}",
    response={200: VariablesOut, **ERRORS},
    summary="A prompt's env needs",
)
def prompt_variable_scan(
    request: AuthedRequest, name: str, params: Query[VariablesQuery]
) -> dict[str, Any]:
    return {"variables": prompt_variables(name, *_who(request, params))}


@router.get(
    "/variables/tools/{name}", response={200: VariablesOut, **ERRORS}, summary="A tool's env needs"
)
def tool_variable_scan(
    request: AuthedRequest, name: str, params: Query[VariablesQuery]
) -> dict[str, Any]:
    return {"variables": tool_variables(name, *_who(request, params))}
