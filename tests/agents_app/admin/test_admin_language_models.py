"""The models page: capabilities as checkboxes, ordered fallbacks, the test provider's script."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from agents_app.models import LanguageModel, ModelFallback
from agents_app.services.definitions.rows import (
    build_catalog,
    model_definition,
    validate_definition,
)
from tests.agents_app.admin.admin_pages import errors_of, fill, post, read_form, set_rows

ADD = reverse("admin:agents_app_languagemodel_add")
pytestmark = pytest.mark.django_db


def change_url(model: LanguageModel) -> str:
    return reverse("admin:agents_app_languagemodel_change", args=[model.pk])


@pytest.fixture
def staff(client: Client, ops: Any) -> Client:
    client.force_login(ops)
    return client


@pytest.fixture
def backup() -> LanguageModel:
    return LanguageModel.objects.create(name="backup", provider="openai", model="gpt-4o-mini")


def add_form(client: Client, **fields: Any) -> dict[str, Any]:
    data = fill(read_form(client, ADD), name="scripted", provider="test", model="scripted-v1")
    return fill(data, **fields)


def test_creating_a_test_model_stores_the_definition_shape(staff: Client, backup: Any) -> None:
    script = [{"content": "Hello!"}, {"toolCalls": [{"name": "lookup_order", "arguments": {}}]}]
    data = add_form(
        staff,
        input_price="0.5",
        capabilities_vision=False,
        script=json.dumps(script),
        streaming_chunk_size="6",
    )
    set_rows(data, "fallback_links", [{"fallback": backup.pk}])

    response = post(staff, ADD, data)

    assert response.status_code == 302, errors_of(response)
    model = LanguageModel.objects.get(name="scripted")
    assert model.capabilities == {
        "vision": False,
        "functionCalling": True,
        "structuredOutputs": True,
    }
    assert model.script == [{"content": "Hello!"}, {"toolCalls": [{"name": "lookup_order"}]}]
    assert model.streaming == {"chunkSize": 6}
    assert model.fallback_names() == ["backup"]
    defn = model_definition(model)
    assert validate_definition(defn, build_catalog([defn])) == []


def test_the_change_page_shows_stored_values_in_the_form(staff: Client, backup: Any) -> None:
    model = LanguageModel.objects.create(
        name="m",
        provider="test",
        model="x",
        capabilities={"vision": False},
        streaming={"chunkDelayMs": 20},
    )
    ModelFallback.objects.create(model=model, fallback=backup, position=0)

    data = read_form(staff, change_url(model))

    assert "capabilities_vision" not in data
    assert data["capabilities_function_calling"] == "on"
    assert data["streaming_chunk_delay_ms"] == "20"
    assert data["fallback_links-0-order"] == "1"
    # Saving the unchanged form changes nothing that matters.
    assert post(staff, change_url(model), data).status_code == 302
    model.refresh_from_db()
    assert model.fallback_names() == ["backup"]
    assert model.streaming == {"chunkDelayMs": 20}


def test_fallbacks_are_saved_in_the_order_given(staff: Client, backup: Any) -> None:
    other = LanguageModel.objects.create(name="other", provider="openai", model="gpt-4o")
    data = add_form(staff)
    set_rows(
        data,
        "fallback_links",
        [{"fallback": backup.pk, "order": "2"}, {"fallback": other.pk, "order": "1"}],
    )

    assert post(staff, ADD, data).status_code == 302
    assert LanguageModel.objects.get(name="scripted").fallback_names() == ["other", "backup"]


@pytest.mark.parametrize(
    ("script", "message"),
    [
        ([{"content": "ok"}, {"content": 5}], "Script item 2: Content must be text."),
        ([{"content": "ok"}, "just text"], "Script item 2: each reply must be a JSON object"),
        ([{"contnet": "typo"}], "Script item 1: Unknown property 'contnet'"),
        ({"content": "not a list"}, "The script must be a JSON list of replies"),
    ],
)
def test_a_bad_script_item_is_reported_by_number(staff: Client, script: Any, message: str) -> None:
    response = post(staff, ADD, add_form(staff, script=json.dumps(script)))

    assert response.status_code == 200
    assert any(message in e for e in errors_of(response)["script"])
    assert not LanguageModel.objects.exists()


def test_a_script_that_is_not_json_says_where(staff: Client) -> None:
    response = post(staff, ADD, add_form(staff, script='[{"content": "a"'))

    assert "This is not valid JSON" in errors_of(response)["script"][0]
    assert "line 1" in errors_of(response)["script"][0]


def test_only_test_models_may_have_a_script(staff: Client) -> None:
    data = add_form(staff, provider="openai", script='[{"content": "hi"}]')

    response = post(staff, ADD, data)

    assert errors_of(response)["script"] == [
        "Only models of the 'test' provider can have a script."
    ]
    assert not LanguageModel.objects.exists()


def test_streaming_settings_on_a_real_provider_are_reported_there(staff: Client) -> None:
    response = post(staff, ADD, add_form(staff, provider="openai", streaming_chunk_size="4"))

    assert "streaming_chunk_size" in errors_of(response)


def test_a_name_with_a_path_is_rejected(staff: Client) -> None:
    response = post(staff, ADD, add_form(staff, name="../evil"))

    assert "Name may use only letters" in errors_of(response)["name"][0]
    assert not LanguageModel.objects.exists()


def test_a_negative_price_is_rejected(staff: Client) -> None:
    response = post(staff, ADD, add_form(staff, input_price="-1"))

    assert errors_of(response)["input_price"] == [
        "A price cannot be negative. Enter 0 or more (US dollars per million tokens)."
    ]


def test_a_negative_price_is_reported_along_with_a_bad_script(staff: Client) -> None:
    data = add_form(staff, provider="test", output_price="-3", script='["oops"]')

    errors = errors_of(post(staff, ADD, data))

    assert errors["output_price"] == [
        "A price cannot be negative. Enter 0 or more (US dollars per million tokens)."
    ]
    assert errors["script"] == [
        'Script item 1: each reply must be a JSON object, like {"content": "Hi"}.'
    ]
    assert not LanguageModel.objects.exists()


def test_an_unknown_fallback_is_rejected(staff: Client) -> None:
    data = add_form(staff)
    set_rows(data, "fallback_links", [{"fallback": "999999"}])

    response = post(staff, ADD, data)

    assert "fallback_links-0-fallback" in errors_of(response)
    assert not LanguageModel.objects.exists()


def test_a_model_cannot_fall_back_to_itself(staff: Client, backup: Any) -> None:
    data = read_form(staff, change_url(backup))
    set_rows(data, "fallback_links", [{"fallback": backup.pk}])

    response = post(staff, change_url(backup), data)

    assert errors_of(response)["fallback_links-0-fallback"] == [
        "A model cannot be its own fallback."
    ]
    assert not ModelFallback.objects.exists()


def test_a_fallback_cycle_is_rejected_and_nothing_changes(staff: Client, backup: Any) -> None:
    first = LanguageModel.objects.create(name="first", provider="openai", model="a")
    ModelFallback.objects.create(model=backup, fallback=first, position=0)
    data = fill(read_form(staff, change_url(first)), model="renamed-id")
    set_rows(data, "fallback_links", [{"fallback": backup.pk}])

    response = post(staff, change_url(first), data)

    assert errors_of(response)["fallback_links"] == [
        "Fallbacks form a cycle: first → backup → first."
    ]
    first.refresh_from_db()
    assert first.model == "a"
    assert first.fallback_names() == []


def test_the_same_fallback_twice_is_rejected(staff: Client, backup: Any) -> None:
    data = add_form(staff)
    set_rows(data, "fallback_links", [{"fallback": backup.pk}, {"fallback": backup.pk}])

    response = post(staff, ADD, data)

    assert errors_of(response)["fallback_links-1-fallback"] == [
        "This model is already in the fallback list."
    ]
    assert not LanguageModel.objects.filter(name="scripted").exists()


def test_nan_in_the_script_is_refused_instead_of_failing_the_database(staff: Client) -> None:
    response = post(staff, ADD, add_form(staff, script='[{"delayMs": NaN}]'))

    assert errors_of(response)["script"] == [
        "NaN is not allowed in JSON; write a number or a string instead."
    ]


def test_two_fallback_rows_can_swap_models(staff: Client, backup: Any) -> None:
    other = LanguageModel.objects.create(name="other", provider="openai", model="gpt-4o")
    model = LanguageModel.objects.create(name="m", provider="openai", model="x")
    ModelFallback.objects.create(model=model, fallback=backup, position=0)
    ModelFallback.objects.create(model=model, fallback=other, position=1)
    data = read_form(staff, change_url(model))
    data["fallback_links-0-fallback"], data["fallback_links-1-fallback"] = (
        str(other.pk),
        str(backup.pk),
    )

    response = post(staff, change_url(model), data)

    assert response.status_code == 302, errors_of(response)
    assert model.fallback_names() == ["other", "backup"]
