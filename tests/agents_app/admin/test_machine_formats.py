"""Issue #55 item 5: the machine formats the walkthrough found are gone. Each filter is tested
alone, then each page where the raw value was seen: the thread record ($0.000885, 19320 ms,
vm:11514:8a615d, stop_on_response), a log (0.000000000000), the eval pages (0.0018, 18979 ms)
and the models (1.500000)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from agents_app.base.people_format import money_fine, per_million, reason, worker
from agents_app.models import (
    Agent,
    EvalDataset,
    EvalResult,
    EvalRun,
    LanguageModel,
    Log,
    Prompt,
    Thread,
    ThreadSession,
)
from agents_app.models.timestamps import now_us
from agents_app.services.evals import checks as evals

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("amount", "text"),
    [
        (Decimal("0.000885"), "$0.00089"),
        (Decimal("0.0018"), "$0.0018"),
        (Decimal("0.009"), "$0.009"),
        (Decimal("0.000000000000"), "$0.00"),
        (Decimal("0.0000004"), "< $0.000001"),
        (Decimal("0.125"), "$0.13"),
        (Decimal("1234.5"), "$1,234.50"),
        (None, "$0.00"),
    ],
)
def test_money_fine_keeps_small_costs_comparable(amount: Decimal | None, text: str) -> None:
    assert money_fine(amount) == text


@pytest.mark.parametrize(
    ("price", "text"),
    [
        (Decimal("1.500000"), "$1.50 per million tokens"),
        (Decimal("0.075000"), "$0.075 per million tokens"),
        (Decimal("15"), "$15.00 per million tokens"),
        (None, "–"),
    ],
)
def test_prices_are_dollars_per_million_tokens(price: Decimal | None, text: str) -> None:
    assert per_million(price) == text


def test_a_worker_claim_and_a_stop_reason_read_as_words() -> None:
    assert worker("vm:11514:8a615d") == ('<span title="vm:11514:8a615d">process 11514 on vm</span>')
    assert worker("") == "–"
    assert reason("stop_on_response") == '<span title="stop_on_response">Answered</span>'
    assert ">Stopped by a person<" in reason("aborted_by_user")


@pytest.fixture
def staff(client: Client, admin_user: Any) -> Client:
    client.force_login(admin_user)
    return client


@pytest.fixture
def thread(alice: Any) -> Thread:
    model = LanguageModel.objects.create(
        name="m", provider="test", model="x", input_price="1.500000", output_price="6.000000"
    )
    agent = Agent.objects.create(
        name="support", side_a_prompt=Prompt.objects.create(name="p", model=model)
    )
    return Thread.objects.create(agent=agent, origin_agent=agent, owner=alice)


def test_the_thread_record_and_a_log_read_as_people_read(staff: Client, thread: Thread) -> None:
    log = Log.objects.create(
        thread=thread,
        model="m",
        cost_total=Decimal("0.000885"),
        cost_input=Decimal("0.000000000000"),
        latency_ms=19320,
        time_to_first_token_ms=850,
        created_at=now_us(),
        is_complete=True,
    )
    ThreadSession.objects.create(
        thread=thread, status="completed", owner="vm:11514:8a615d", stop_reason="stop_on_response"
    )
    page = staff.get(reverse("admin:agents_app_thread_change", args=[thread.pk])).content.decode()
    assert "$0.00089" in page and "19.3 s" in page
    assert "process 11514 on vm" in page and ">Answered<" in page
    for raw in ("$0.000885", "19320 ms", ">vm:11514:8a615d<", ">stop_on_response<"):
        assert raw not in page, raw
    detail = staff.get(reverse("admin:agents_app_log_change", args=[log.pk])).content.decode()
    assert "0.000000000000" not in detail and "0.000885" not in detail
    assert "$0.00089" in detail and "19.3 s" in detail and "850 ms" in detail


def test_eval_pages_show_money_and_durations(staff: Client, thread: Thread) -> None:
    dataset = EvalDataset.objects.create(name="set")
    case = evals.case_save(
        dataset=dataset, name="c", messages=[{"role": "user", "content": "Hi"}], checks=[]
    )
    runs = []
    for cost, latency in ((Decimal("0.0018"), 18979), (Decimal("0.0021"), 20100)):
        run = EvalRun.objects.create(dataset=dataset, agent="support", status="completed")
        EvalResult.objects.create(
            run=run, case=case, status="passed", cost=cost, latency_ms=latency, score=1
        )
        runs.append(run)
    listing = staff.get(reverse("admin:agents_app_evalrun_changelist")).content.decode()
    assert "$0.0018" in listing and "0.0018<" not in listing.replace("$0.0018<", "")
    detail = staff.get(reverse("admin:agents_app_evalrun_change", args=[runs[0].pk]))
    text = detail.content.decode()
    assert "cost $0.0018" in text and "median time 19.0 s" in text and "18979" not in text
    compare = staff.get(
        reverse("admin:agents_app_evalrun_compare") + f"?a={runs[0].pk}&b={runs[1].pk}"
    ).content.decode()
    assert "$0.0018" in compare and "$0.0021" in compare
    assert "19.0 s" in compare and "20.1 s" in compare and " ms<" not in compare


def test_model_prices_read_as_dollars_per_million_tokens(staff: Client, thread: Thread) -> None:
    model = LanguageModel.objects.get(name="m")
    listing = staff.get(reverse("admin:agents_app_languagemodel_changelist")).content.decode()
    assert "$1.50 / $6.00" in listing and "Price per million tokens" in listing
    assert "1.500000" not in listing
    form = staff.get(
        reverse("admin:agents_app_languagemodel_change", args=[model.pk])
    ).content.decode()
    assert 'value="1.50"' in form and 'value="6.00"' in form and "1.500000" not in form
