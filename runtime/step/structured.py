"""Structured output: checking a final answer against the prompt's ``responseSchema``.

The adapters ask each vendor for JSON matching the schema in its native form;
vendors do not all guarantee it (OpenAI only in strict mode, Gemini and
OpenRouter's upstreams loosely), so the answer is checked here. A wrong answer
is retried once with the problem appended as a user note (``retry_messages``);
a second wrong answer fails the message with ``SCHEMA_MISMATCH`` (see
``runtime.step.llm_half``).
"""

from __future__ import annotations

import json
from typing import Any

# Not a vendor failure (the vendor answered), so not one of the providers' error codes.
SCHEMA_MISMATCH = "invalid_response"
RETRY_NOTE = (
    "{problem} Answer again with only the JSON value that matches the required schema, "
    "nothing before or after it."
)


def answer_problem(schema: dict[str, Any], content: str) -> str | None:
    """Why ``content`` is not a JSON value matching ``schema`` (None when it is)."""
    try:
        value = json.loads(content)
    except json.JSONDecodeError as exc:
        return f"The answer is not valid JSON ({exc.msg} at character {exc.pos})."
    from jsonschema.exceptions import best_match  # on use (runtime.tools.toolset says why)
    from jsonschema.validators import validator_for

    error = best_match(validator_for(schema)(schema).iter_errors(value))
    if error is None:
        return None
    where = "/".join(str(part) for part in error.absolute_path)
    at = f" at '{where}'" if where else ""
    return f"The answer does not match the response schema{at}: {error.message}."


def retry_messages(
    messages: list[dict[str, Any]], content: str, problem: str
) -> list[dict[str, Any]]:
    """The request's messages plus the wrong answer and a note saying what is wrong."""
    return [
        *messages,
        {"role": "assistant", "content": content},
        {"role": "user", "content": RETRY_NOTE.format(problem=problem)},
    ]
