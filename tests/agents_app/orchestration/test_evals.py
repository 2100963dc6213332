"""Evals (issue #42): checks, a run of an agent pinned at a prompt version over a dataset
with the scripted provider, two runs compared, and ``manage.py run_eval``'s exit code."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from agents_app.base.errors import Invalid
from agents_app.models import EvalDataset, EvalResult, EvalRun, Log
from agents_app.services.definitions.saves import save_definitions
from agents_app.services.evals import checks as evals
from runtime.core.spec import AgentDefinition, ModelDefinition, PromptDefinition, SideConfig
from tests.agents_app.api.api_support import _api_hosts  # noqa: F401 (executor off: run_eval runs)

pytestmark = pytest.mark.django_db(transaction=True)


def _oracle() -> None:
    """Prompt ``oracle-prompt`` version 1 answers 41 (model ``old-model``), version 2
    answers 42 (``new-model``): a prompt change that a dataset can tell apart."""
    models = [
        ModelDefinition(name=name, provider="test", model="scripted", script=[{"content": text}])
        for name, text in (("old-model", "The answer is 41."), ("new-model", "The answer is 42."))
    ]
    save_definitions([("model", m) for m in models], strict_code_names=False)
    for model in ("old-model", "new-model"):
        prompt = PromptDefinition(
            name="oracle-prompt", model=model, prompt="Answer.", include_chat=True
        )
        agent = AgentDefinition(name="oracle", side_a=SideConfig(prompt="oracle-prompt"))
        save_definitions([("prompt", prompt), ("agent", agent)], strict_code_names=False)


def _dataset() -> EvalDataset:
    dataset = EvalDataset.objects.create(name="oracle-set")
    ask = [{"role": "user", "content": "What is the answer?"}]
    evals.case_save(
        dataset=dataset, name="says 42", messages=ask, checks=[{"type": "contains", "text": "42"}]
    )
    evals.case_save(
        dataset=dataset,
        name="a number",
        messages=[
            {"role": "user", "content": "Hello"},
            {"role": "assistant", "content": "Hi, ask me anything."},
            *ask,
        ],
        checks=[
            {"type": "matches", "pattern": r"answer is \d+"},
            {"type": "stop_reason", "equals": "stop_on_response"},
        ],
    )
    return dataset


def _run_eval(*args: str) -> tuple[str, str | None]:
    out = StringIO()
    try:
        call_command("run_eval", *args, stdout=out)
    except CommandError as exc:
        return out.getvalue(), str(exc)
    return out.getvalue(), None


def test_run_eval_compares_two_versions_of_a_prompt() -> None:
    _oracle()
    _dataset()
    base = ["--dataset", "oracle-set", "--agent", "oracle"]
    old_out, old_error = _run_eval(*base, "--pin", "prompts/oracle-prompt=1", "--label", "v1")
    assert old_error is not None and old_error.startswith("Eval failed: 1/2 passed (50%)")
    assert "FAIL      says 42  (the answer does not contain '42')" in old_out
    new_out, new_error = _run_eval(*base, "--pin", "prompts/oracle-prompt=2", "--label", "v2")
    assert new_error is None and "Eval passed: 2/2 passed (100%)" in new_out
    v1, v2 = EvalRun.objects.get(label="v1"), EvalRun.objects.get(label="v2")
    # What the model was asked: each case's request went to the pinned version's model.
    models_of = lambda run: set(  # noqa: E731
        Log.objects.filter(thread__in=run.results.values("thread")).values_list("model", flat=True)
    )
    assert models_of(v1) == {"old-model"} and models_of(v2) == {"new-model"}
    table = evals.compare(v1, v2)
    changed = [row["case"].name for row in table["rows"] if row["changed"]]
    assert changed == ["says 42"]
    assert table["totals"]["a"]["pass_rate"] == 0.5 and table["totals"]["b"]["pass_rate"] == 1.0
    assert all(r.thread_id and r.latency_ms is not None for r in v2.results.all())


def test_checks_are_typed_and_refused_with_the_field_named() -> None:
    with pytest.raises(Invalid, match=r"checks.0.schema"):
        evals.parse_checks([{"type": "json_schema", "schema": {"type": 5}}])
    with pytest.raises(Invalid, match=r"checks.0.pattern"):
        evals.parse_checks([{"type": "matches", "pattern": "("}])
    with pytest.raises(Invalid, match=r"checks.0"):
        evals.parse_checks([{"type": "sounds_good"}])
    with pytest.raises(Invalid, match=r"checks.0.contains.colour"):
        evals.parse_checks([{"type": "contains", "text": "x", "colour": "red"}])
    with pytest.raises(Invalid, match="the last message must be the user's"):
        evals.parse_messages([{"role": "assistant", "content": "hi"}])


def test_each_check_reads_the_answer_the_tools_and_the_stop() -> None:
    outcome = evals.Outcome(
        answer='{"status": "shipped"}',
        stop_reason="stop_on_response",
        tool_calls=[{"function": {"name": "lookup_order", "arguments": '{"order_id": "A-1"}'}}],
    )
    checks = evals.parse_checks(
        [
            {"type": "json_schema", "schema": {"type": "object", "required": ["status"]}},
            {"type": "tool_called", "name": "lookup_order", "arguments": {"order_id": "A-1"}},
            {"type": "tool_called", "name": "lookup_order", "arguments": {"order_id": "B-2"}},
            {"type": "tool_not_called", "name": "refund"},
            {"type": "not_contains", "text": "sorry"},
            {"type": "judge", "agent": "critic", "criteria": "polite", "pass_at": 0.7},
        ]
    )
    passed, value, details = evals.score(checks, outcome, judged=0.9)
    assert [d["passed"] for d in details] == [True, True, False, True, True, True]
    assert not passed and value == pytest.approx(5 / 6)
    assert details[2]["detail"] == "lookup_order was not called with those arguments"
    assert evals.judge_score("I'd say 0.8 overall") == 0.8 and evals.judge_score("great") is None


def test_a_run_of_an_unknown_version_is_refused() -> None:
    _oracle()
    _dataset()
    _, error = _run_eval(
        "--dataset", "oracle-set", "--agent", "oracle", "--pin", "prompts/oracle-prompt=9"
    )
    assert error == "Prompt oracle-prompt has no version 9"
    assert not EvalResult.objects.exists()
    _, error = _run_eval("--dataset", "oracle-set", "--agent", "oracle", "--pin", "prompts/other=1")
    assert error is not None
    assert error.startswith("versions: agent oracle does not use prompts/other (it uses agents/")


def test_the_studio_starts_compares_and_makes_cases_from_feedback() -> None:
    from django.contrib.auth import get_user_model
    from django.test import Client

    from agents_app.models import Feedback, Message
    from agents_app.orchestration.thread_creation import thread_create

    _oracle()
    _dataset()
    User = get_user_model()
    root = User.objects.create_superuser("root", password="pw-for-tests-1")
    browser = Client()
    browser.force_login(root)
    for pin, label in ((1, "v1"), (2, "v2")):
        _run_eval(
            "--dataset",
            "oracle-set",
            "--agent",
            "oracle",
            "--pin",
            f"prompts/oracle-prompt={pin}",
            "--label",
            label,
            "--threshold",
            "0",
        )
    v1, v2 = EvalRun.objects.get(label="v1"), EvalRun.objects.get(label="v2")
    page = browser.get(f"/admin/agents_app/evalrun/compare/?a={v1.pk}&b={v2.pk}").content.decode()
    assert "1 of 2 (50%)" in page and "2 of 2 (100%)" in page
    assert page.count("changed</span>") == 1 and "The answer is 41." in page
    chosen = browser.post(
        "/admin/agents_app/evalrun/",
        {"action": "compare_two", "_selected_action": [str(v1.pk), str(v2.pk)]},
    )
    assert chosen.status_code == 302 and "/evalrun/compare/?a=" in chosen["Location"]
    started = browser.post(
        "/admin/agents_app/evalrun/add/",
        {
            "dataset": EvalDataset.objects.get().pk,
            "agent": "oracle",
            "pins": '{"prompts/oracle-prompt": 2}',
            "label": "from the studio",
            "concurrency": 2,
        },
    )
    assert started.status_code == 302, started.content[:500]
    run = EvalRun.objects.get(label="from the studio")
    assert run.results.count() == 2 and run.versions == {"prompts/oracle-prompt": 2}
    # A thumbs-down becomes a case in one click.
    alice = User.objects.create_user("alice", password="pw-for-tests-1")
    thread = thread_create(user=alice, agent_name="oracle")
    Message.objects.create(thread=thread, role="user", content="Is it 41?", created_at=1)
    reply = Message.objects.create(
        thread=thread, role="assistant", content="Yes, 41.", created_at=2
    )
    rating = Feedback.objects.create(message=reply, user=alice, score=-1, comment="It is 42")
    made = browser.post(
        "/admin/agents_app/feedback/",
        {"action": "make_cases", "_selected_action": [str(rating.pk)]},
    )
    assert made.status_code == 302
    case = EvalDataset.objects.get(name="From feedback").cases.get()
    assert case.messages == [{"role": "user", "content": "Is it 41?"}] and case.notes == "It is 42"
    assert case.source_message_id == reply.pk


def test_eval_results_never_carry_a_planted_secret() -> None:
    from django.contrib.auth import get_user_model

    from agents_app.models import EnvValue
    from tests.agents_app.api.api_support import client_for

    canary = "sk-canary-evals-93b1"
    EnvValue.objects.create(scope="instance", key="SHOP_TOKEN", value=canary, value_type="secret")
    model = ModelDefinition(
        name="leaky-model",
        provider="test",
        model="scripted",
        script=[{"content": f"Token {canary}."}],
    )
    prompt = PromptDefinition(
        name="leaky-prompt", model="leaky-model", prompt="Answer.", include_chat=True
    )
    agent = AgentDefinition(name="leaky", side_a=SideConfig(prompt="leaky-prompt"))
    save_definitions(
        [("model", model), ("prompt", prompt), ("agent", agent)], strict_code_names=False
    )
    dataset = EvalDataset.objects.create(name="leak-set")
    evals.case_save(
        dataset=dataset,
        name="says the token",
        messages=[{"role": "user", "content": "What is the token?"}],
        checks=[{"type": "contains", "text": canary}],
    )
    _, error = _run_eval("--dataset", "leak-set", "--agent", "leaky", "--threshold", "0")
    assert error is None
    result = EvalResult.objects.get()
    assert result.answer == "Token [REDACTED]." and result.status == "failed"
    root = get_user_model().objects.create_superuser("root", password="pw-for-tests-1")
    body = client_for(root).get(f"/api/evals/runs/{result.run_id}").content.decode()
    assert canary not in body and "[REDACTED]" in body


def test_a_judge_agent_scores_the_answer() -> None:
    _oracle()
    critic = ModelDefinition(
        name="critic-model", provider="test", model="scripted", script=[{"content": "Score: 0.8"}]
    )
    prompt = PromptDefinition(
        name="critic-prompt", model="critic-model", prompt="Judge.", include_chat=True
    )
    agent = AgentDefinition(name="critic", side_a=SideConfig(prompt="critic-prompt"))
    save_definitions(
        [("model", critic), ("prompt", prompt), ("agent", agent)], strict_code_names=False
    )
    dataset = EvalDataset.objects.create(name="judged")
    judge = {"type": "judge", "agent": "critic", "criteria": "Names a number.", "pass_at": 0.7}
    evals.case_save(
        dataset=dataset,
        name="judged",
        messages=[{"role": "user", "content": "Answer?"}],
        checks=[judge],
    )
    out, error = _run_eval("--dataset", "judged", "--agent", "oracle")
    assert error is None, out
    result = EvalResult.objects.get()
    assert result.status == "passed" and result.checks[0]["score"] == 0.8
    # The judge was asked about this case's answer, in a thread of its own.
    from agents_app.models import Message

    asked = Message.objects.get(thread=result.judge_thread, role="user").content
    assert "Names a number." in asked and "The answer is 42." in asked


def test_cancelling_a_run_stops_its_cases() -> None:
    from django.contrib.auth import get_user_model

    from agents_app.orchestration.eval_runs import advance, run_start
    from tests.agents_app.api.api_support import client_for

    _oracle()
    _dataset()
    root = get_user_model().objects.create_superuser("root", password="pw-for-tests-1")
    run = run_start(dataset="oracle-set", agent="oracle", user=root, concurrency=1)
    advance(str(run.pk))  # one case starts (concurrency 1), the other waits
    answer = client_for(root).post(f"/api/evals/runs/{run.pk}/cancel")
    assert answer.status_code == 200 and answer.json()["run"]["status"] == "cancelled"
    assert sorted(run.results.values_list("status", flat=True)) == ["cancelled", "cancelled"]
    started = run.results.exclude(thread=None).get()
    assert started.thread is not None and started.thread.stopped
