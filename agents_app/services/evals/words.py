"""Mistakes in an eval case, as sentences that name the message or the check ("Check 1: the
text to look for is required"), never pydantic's ``checks.0.contains.text: Field required``.
The studio's case editor and dataset files use them (issue #55)."""

from __future__ import annotations

import re
from typing import Any

from pydantic import ValidationError as PydanticError
from pydantic_core import ErrorDetails

from agents_app.base.errors import DomainError
from agents_app.models import Agent
from agents_app.services.evals import checks as evals

CHECK_WORDS = {
    "contains": "the reply contains…",
    "not_contains": "the reply does not contain…",
    "matches": "the reply matches a pattern",
    "json_schema": "the reply is JSON that fits a schema",
    "tool_called": "the agent used the tool…",
    "tool_not_called": "the agent did not use the tool…",
    "stop_reason": "the turn ended because…",
    "judge": "a judge agent says…",
}
FIELD_WORDS = {
    "text": "the text to look for",
    "case_sensitive": "“match capitals exactly”",
    "pattern": "the pattern",
    "schema": "the JSON Schema",
    "name": "the tool's name",
    "arguments": "the arguments",
    "equals": "the reason",
    "agent": "the judge agent",
    "criteria": "what the judge looks for",
    "pass_at": "the passing score",
    "type": "the kind of check",
    "role": "who says it",
    "content": "the text",
}
PROBLEM_WORDS = {
    "missing": "is required",
    "string_too_short": "is required",
    "extra_forbidden": "is not a setting of this kind of check",
    "less_than_equal": "must be from 0 to 1",
    "greater_than_equal": "must be from 0 to 1",
    "dict_type": "must be a JSON object",
    "bool_parsing": "must be yes or no",
    "float_parsing": "must be a number",
    "string_too_long": "is too long",
    "literal_error": "must be the person or the agent",
}


def _problem(error: ErrorDetails, noun: str) -> str:
    """One pydantic error of a list of messages or checks as a sentence."""
    loc = [str(part) for part in error["loc"]]
    if not loc:
        return f"The {noun}s must be a list."
    index = int(loc[0]) + 1 if loc[0].isdigit() else 0
    head = f"{noun.capitalize()} {index}"
    kind = error["type"]
    if kind == "union_tag_invalid":
        tag = (error.get("ctx") or {}).get("tag", "")
        return f"{head}: there is no kind of check called “{tag}”."
    if kind in ("union_tag_not_found", "model_attributes_type", "model_type"):
        return f"{head}: choose what kind of check it is."
    field = loc[-1] if len(loc) > 1 else ""
    what = FIELD_WORDS.get(field, field.replace("_", " ") or "it")
    words = PROBLEM_WORDS.get(kind, f"is not right ({error['msg']})")
    if kind == "extra_forbidden":
        return f"{head}: “{field}” {words}."
    return f"{head}: {what} {words}."


def message_problems(data: Any) -> list[str]:
    """Every mistake in a case's conversation, in words; empty when it can be sent."""
    try:
        messages = evals._MESSAGES.validate_python(data)
    except PydanticError as exc:
        return [_problem(e, "message") for e in exc.errors()]
    if not messages:
        return ["Add the person's message: what the case asks the agent."]
    if messages[-1].role != "user":
        return ["The last message must be the person's: it is the question the case sends."]
    return []


def check_problems(data: Any) -> list[str]:
    """Every mistake in a case's checks, in words (an unknown judge agent included)."""
    try:
        checks = evals._CHECKS.validate_python(data)
    except PydanticError as exc:
        return [_problem(e, "check") for e in exc.errors()]
    problems = []
    agents = set(Agent.objects.values_list("name", flat=True))
    for index, check in enumerate(checks, start=1):
        if isinstance(check, evals.Judge) and check.agent not in agents:
            problems.append(f"Check {index}: there is no agent called “{check.agent}” to judge.")
    try:
        evals.parse_checks(data)
    except DomainError as exc:  # a pattern or a schema that does not compile
        found = re.match(r"checks\.(\d+)\.(\w+): (.*)", exc.message)
        if found:
            number, field, why = int(found.group(1)) + 1, found.group(2), found.group(3)
            problems.append(f"Check {number}: {FIELD_WORDS.get(field, field)} is {why}.")
        else:
            problems.append(exc.message)
    return problems


def env_problems(data: Any) -> list[str]:
    if not isinstance(data, dict):
        return ["The env values must be names with their values."]
    return [
        f"Env value {name or '(no name)'}: "
        + ("write its name." if not str(name).strip() else "its value must be text.")
        for name, value in data.items()
        if not str(name).strip() or not isinstance(value, str)
    ]
