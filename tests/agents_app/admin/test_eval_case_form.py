"""Issue #55 item 1: an eval case is edited by form. The page carries the case editor's rows
(the JSON it posts is hidden behind them), what is saved is what the rows wrote, and every
mistake is a sentence naming the message or the check, never ``checks.0.contains.text:
Field required``. A version pin written without its kind is understood, or refused with the
right reason, on the field."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from agents_app.forms.evals import parse_pins
from agents_app.models import EvalCase, EvalDataset, EvalRun
from agents_app.services.definitions.saves import save_definitions
from agents_app.services.evals import checks as evals
from agents_app.services.evals.words import check_problems, message_problems
from runtime.core.spec import AgentDefinition, ModelDefinition, PromptDefinition, SideConfig
from tests.agents_app.admin.admin_pages import errors_of, fill, post, read_form, set_rows

pytestmark = pytest.mark.django_db

ADD = "/admin/agents_app/evaldataset/add/"
ASK = [
    {"role": "user", "content": "Where is order A-1?"},
    {"role": "assistant", "content": "Which shop?"},
    {"role": "user", "content": "The Paris one."},
]


def _story() -> None:
    """Agent story_agent → prompt story_prompt (v1, v2) → model slow_writer (v1, v2)."""
    for text in ("Once.", "Twice."):
        save_definitions(
            [
                (
                    "model",
                    ModelDefinition(
                        name="slow_writer",
                        provider="test",
                        model="scripted",
                        script=[{"content": text}],
                    ),
                ),
                ("prompt", PromptDefinition(name="story_prompt", model="slow_writer", prompt=text)),
                (
                    "agent",
                    AgentDefinition(name="story_agent", side_a=SideConfig(prompt="story_prompt")),
                ),
            ],
            strict_code_names=False,
        )


def _case_form(client: Client, **case: Any) -> dict[str, Any]:
    data = fill(read_form(client, ADD), name="orders")
    row = {"name": "finds the order", **case}
    for key in ("messages", "checks", "env"):
        if key in row and not isinstance(row[key], str):
            row[key] = json.dumps(row[key])
    return set_rows(data, "cases", [row])


def test_the_case_editor_saves_rows_of_messages_checks_and_env(admin_client: Client) -> None:
    _story()
    page = admin_client.get(ADD).content.decode()
    assert 'data-eval-builder="messages"' in page and 'data-eval-builder="checks"' in page
    assert "studio/eval_cases.js" in page and "story_agent" in page  # judges offered by name
    assert "Answered" in page  # stop reasons in words for the stop_reason check
    checks = [
        {"type": "contains", "text": "A-1", "case_sensitive": True},
        {"type": "tool_called", "name": "lookup_order", "arguments": {"order": "A-1"}},
        {"type": "stop_reason", "equals": "stop_on_response"},
        {"type": "judge", "agent": "story_agent", "criteria": "Polite.", "pass_at": 0.7},
    ]
    data = _case_form(admin_client, messages=ASK, checks=checks, env={"SHOP": "Paris"})
    saved = post(admin_client, ADD, data)
    assert saved.status_code == 302, errors_of(saved)
    case = EvalCase.objects.get()
    assert (case.messages, case.checks, case.env) == (ASK, checks, {"SHOP": "Paris"})


def test_mistakes_are_sentences_naming_the_message_and_the_check(admin_client: Client) -> None:
    data = _case_form(
        admin_client,
        messages=[{"role": "user", "content": ""}, {"role": "assistant", "content": "Hi"}],
        checks=[
            {"type": "contains"},
            {"type": "colour"},
            {"type": "matches", "pattern": "("},
            {"type": "judge", "agent": "nobody", "criteria": "Kind.", "pass_at": 3},
        ],
        env={"": "x"},
    )
    response = post(admin_client, ADD, data)
    errors = errors_of(response)
    assert errors["cases-0-messages"] == ["Message 1: the text is required."]
    assert errors["cases-0-checks"] == [
        "Check 1: the text to look for is required.",
        "Check 2: there is no kind of check called “colour”.",
        "Check 4: the passing score must be from 0 to 1.",
    ]
    assert errors["cases-0-env"] == ["Env value (no name): write its name."]
    page = response.content.decode()
    assert "checks.0" not in page and "Field required" not in page
    assert not EvalDataset.objects.exists()
    # Once the shapes are right, the next layer of mistakes is in words too.
    data = _case_form(
        admin_client,
        messages=[{"role": "assistant", "content": "Hi"}],
        checks=[
            {"type": "matches", "pattern": "("},
            {"type": "judge", "agent": "nobody", "criteria": "Kind."},
        ],
    )
    errors = errors_of(post(admin_client, ADD, data))
    assert errors["cases-0-messages"] == [
        "The last message must be the person's: it is the question the case sends."
    ]
    assert errors["cases-0-checks"][0] == "Check 2: there is no agent called “nobody” to judge."
    assert errors["cases-0-checks"][1].startswith(
        "Check 1: the pattern is not a regular expression"
    )


def test_problems_in_words_cover_every_shape() -> None:
    assert check_problems({"a": 1}) == ["The checks must be a list."]
    assert check_problems([{}]) == ["Check 1: choose what kind of check it is."]
    assert check_problems([{"type": "contains", "text": "a", "colour": 1}]) == [
        "Check 1: “colour” is not a setting of this kind of check."
    ]
    assert check_problems([{"type": "json_schema", "schema": "x"}]) == [
        "Check 1: the JSON Schema must be a JSON object."
    ]
    assert message_problems([]) == ["Add the person's message: what the case asks the agent."]
    assert message_problems([{"role": "robot", "content": "a"}]) == [
        "Message 1: who says it must be the person or the agent."
    ]
    assert parse_pins("story_prompt = 1\nmodels/slow_writer: 2\nstory_agent v1") == {
        "story_prompt": 1,
        "models/slow_writer": 2,
        "story_agent": 1,
    }


def _start(client: Client, pins: str) -> Any:
    dataset = EvalDataset.objects.get()
    return client.post(
        "/admin/agents_app/evalrun/add/",
        {
            "dataset": dataset.pk,
            "agent": "story_agent",
            "pins": pins,
            "label": pins,
            "concurrency": 1,
        },
    )


def test_a_pin_without_its_kind_is_understood_or_refused_for_the_right_reason(
    admin_client: Client,
) -> None:
    _story()
    dataset = EvalDataset.objects.create(name="stories")
    evals.case_save(dataset=dataset, name="tells", messages=ASK[:1], checks=[])
    started = _start(admin_client, "slow_writer = 1\nstory_prompt = 2")
    assert started.status_code == 302, errors_of(started)
    run = EvalRun.objects.get()
    assert run.versions == {"models/slow_writer": 1, "prompts/story_prompt": 2}
    refusals = {
        "slow_writer = 9": "Model slow_writer has no version 9.",
        "fast_writer = 1": "Agent story_agent uses nothing called fast_writer (it uses "
        "agents/story_agent, prompts/story_prompt, models/slow_writer).",
        "prompts/slow_writer = 1": "Agent story_agent uses slow_writer as models/slow_writer, "
        "not prompts/slow_writer: write models/slow_writer = 1.",
        "slow_writer is 1": "Line 1 (“slow_writer is 1”): write a name, “=” and a version "
        "number, like support-prompt = 4.",
    }
    for pins, words in refusals.items():
        response = _start(admin_client, pins)
        assert response.status_code == 200, pins
        assert errors_of(response) == {"pins": [words]}
    assert EvalRun.objects.count() == 1
