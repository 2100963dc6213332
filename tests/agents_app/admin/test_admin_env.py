"""Env values in the studio: secrets are write-only, text values are shown."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from agents_app.models import EnvValue, LanguageModel, Prompt
from tests.agents_app.admin.admin_pages import (
    change_row,
    errors_of,
    fill,
    post,
    read_form,
    set_rows,
)

ADD = reverse("admin:agents_app_envvalue_add")
LIST = reverse("admin:agents_app_envvalue_changelist")
SECRET = "sk-canary-4f1c9e-do-not-show"
pytestmark = pytest.mark.django_db


def change_url(env: EnvValue) -> str:
    return reverse("admin:agents_app_envvalue_change", args=[env.pk])


@pytest.fixture
def staff(client: Client, ops: Any) -> Client:
    client.force_login(ops)
    return client


def instance_secret(key: str = "OPENAI_API_KEY", value: str = SECRET) -> EnvValue:
    env = EnvValue(scope="instance", key=key, value_type="secret")
    env.value = value
    env.save()
    return env


def test_adding_an_instance_secret_stores_it_encrypted(staff: Client) -> None:
    data = fill(
        read_form(staff, ADD),
        scope="instance",
        key="OPENAI_API_KEY",
        value_type="secret",
        value_input=SECRET,
    )

    response = post(staff, ADD, data)

    assert response.status_code == 302, errors_of(response)
    env = EnvValue.objects.get()
    assert env.value == SECRET and SECRET not in env.ciphertext
    assert env.updated_by.username == "ops"
    follow = staff.get(response["Location"])
    assert SECRET not in follow.content.decode()


def test_the_change_page_says_set_and_who_changed_it_but_never_the_secret(staff: Client) -> None:
    env = instance_secret()
    staff.post(change_url(env), fill(read_form(staff, change_url(env)), value_input="sk-new-value"))

    page = staff.get(change_url(env)).content.decode()

    assert "sk-new-value" not in page and SECRET not in page
    assert env.ciphertext not in page
    assert "studio-status-set" in page
    assert "changed by ops" in page


def test_leaving_the_value_empty_keeps_the_secret(staff: Client) -> None:
    env = instance_secret()
    data = read_form(staff, change_url(env))
    assert data["value_input"] == ""  # the password input never carries the stored value

    response = post(staff, change_url(env), fill(data, key="OPENAI_KEY"))

    assert response.status_code == 302
    env.refresh_from_db()
    assert (env.key, env.value) == ("OPENAI_KEY", SECRET)


def test_typing_a_new_value_replaces_the_secret(staff: Client) -> None:
    env = instance_secret()

    post(staff, change_url(env), fill(read_form(staff, change_url(env)), value_input="sk-rotated"))

    env.refresh_from_db()
    assert env.value == "sk-rotated"


def test_a_secret_cannot_be_revealed_by_switching_it_to_text(staff: Client) -> None:
    env = instance_secret()

    response = post(
        staff, change_url(env), fill(read_form(staff, change_url(env)), value_type="text")
    )

    assert "type the value again" in errors_of(response)["value_input"][0]
    assert SECRET not in response.content.decode()
    env.refresh_from_db()
    assert env.value_type == "secret"


def test_a_secret_becomes_text_when_its_value_is_typed_again(staff: Client) -> None:
    env = instance_secret(value="eu-west-1")

    post(
        staff,
        change_url(env),
        fill(read_form(staff, change_url(env)), value_type="text", value_input="eu-west-1"),
    )

    env.refresh_from_db()
    assert env.value_type == "text"
    assert "eu-west-1" in staff.get(LIST).content.decode()


def test_text_values_are_shown_and_editable(staff: Client) -> None:
    env = EnvValue(scope="instance", key="REGION", value_type="text")
    env.value = "eu-west-1"
    env.save()

    data = read_form(staff, change_url(env))
    assert data["value_input"] == "eu-west-1"
    post(staff, change_url(env), fill(data, value_input="us-east-1"))

    env.refresh_from_db()
    assert env.value == "us-east-1"


def test_a_text_value_switched_to_secret_is_not_echoed_on_error(staff: Client) -> None:
    env = EnvValue(scope="instance", key="REGION", value_type="text")
    env.value = "eu-west-1"
    env.save()
    data = fill(
        read_form(staff, change_url(env)), value_type="secret", value_input=SECRET, key="has space"
    )

    response = post(staff, change_url(env), data)

    assert "cannot contain spaces" in errors_of(response)["key"][0]
    assert SECRET not in response.content.decode()


def test_a_new_secret_needs_a_value(staff: Client) -> None:
    data = fill(read_form(staff, ADD), scope="instance", key="K", value_type="secret")

    response = post(staff, ADD, data)

    assert errors_of(response)["value_input"] == ["Enter the secret's value."]


def test_a_user_value_needs_its_user_and_an_instance_value_must_not_have_one(
    staff: Client, alice: Any
) -> None:
    user_value = fill(read_form(staff, ADD), scope="user", key="K", value_input="v")
    instance_value = fill(
        read_form(staff, ADD), scope="instance", user=alice.pk, key="K", value_input="v"
    )

    assert errors_of(post(staff, ADD, user_value))["user"] == ["Choose whose value this is."]
    assert "applies to everyone" in errors_of(post(staff, ADD, instance_value))["user"][0]
    assert not EnvValue.objects.exists()


def test_a_duplicate_name_is_reported_without_echoing_the_typed_secret(
    staff: Client, alice: Any
) -> None:
    instance_secret(key="K", value="first")
    data = fill(read_form(staff, ADD), scope="instance", key="K", value_input=SECRET)

    response = post(staff, ADD, data)

    assert errors_of(response)["key"] == ["A value named K already exists. Edit that one instead."]
    assert SECRET not in response.content.decode()
    assert EnvValue.objects.count() == 1


def test_user_values_of_different_users_may_share_a_name(
    staff: Client, alice: Any, bob: Any
) -> None:
    for user in (alice, bob):
        data = fill(
            read_form(staff, ADD),
            scope="user",
            user=user.pk,
            key="GITHUB_TOKEN",
            value_input=f"t-{user}",
        )
        assert post(staff, ADD, data).status_code == 302
    assert EnvValue.objects.filter(scope="user", key="GITHUB_TOKEN").count() == 2


def test_a_users_own_values_are_edited_on_the_user_page(staff: Client, alice: Any) -> None:
    url = reverse("admin:auth_user_change", args=[alice.pk])
    data = set_rows(
        read_form(staff, url), "env_values", [{"key": "GITHUB_TOKEN", "value_input": SECRET}]
    )

    response = post(staff, url, data)

    assert response.status_code == 302, errors_of(response)
    env = EnvValue.objects.get()
    assert (env.scope, env.user, env.value, env.updated_by.username) == (
        "user",
        alice,
        SECRET,
        "ops",
    )
    assert SECRET not in staff.get(url).content.decode()


def test_an_inline_keeps_secrets_left_empty_and_rejects_duplicate_names(staff: Client) -> None:
    model = LanguageModel.objects.create(name="gpt", provider="openai", model="x")
    prompt = Prompt.objects.create(name="p", model=model)
    env = EnvValue(scope="prompt", prompt=prompt, key="TOKEN", value_type="secret")
    env.value = SECRET
    env.save()
    url = reverse("admin:agents_app_prompt_change", args=[prompt.pk])

    unchanged = change_row(read_form(staff, url), "env_values", 0, key="TOKEN2")
    assert post(staff, url, unchanged).status_code == 302
    env.refresh_from_db()
    assert (env.key, env.value) == ("TOKEN2", SECRET)

    twice = set_rows(read_form(staff, url), "env_values", [{"key": "TOKEN2", "value_input": "x"}])
    response = post(staff, url, twice)
    assert "already set above" in errors_of(response)["env_values-1-key"][0]
    assert EnvValue.objects.count() == 1


def test_a_view_only_user_sees_whether_a_secret_is_set_never_its_value(
    client: Client, make_user: Any
) -> None:
    viewer = make_user("viewer")
    viewer.is_staff = True
    viewer.save()
    viewer.user_permissions.add(*Permission.objects.filter(codename__startswith="view_"))
    client.force_login(viewer)
    env = instance_secret()

    page = client.get(change_url(env)).content.decode()

    assert client.get(change_url(env)).status_code == 200
    assert "secret is set" in page
    assert SECRET not in page and env.ciphertext not in page


def test_two_inline_rows_can_swap_names(staff: Client) -> None:
    model = LanguageModel.objects.create(name="gpt", provider="openai", model="x")
    prompt = Prompt.objects.create(name="p", model=model)
    for key, value in (("A", "first"), ("B", "second")):
        env = EnvValue(scope="prompt", prompt=prompt, key=key, value_type="secret")
        env.value = value
        env.save()
    url = reverse("admin:agents_app_prompt_change", args=[prompt.pk])
    data = change_row(read_form(staff, url), "env_values", 0, key="B")
    change_row(data, "env_values", 1, key="A")

    response = post(staff, url, data)

    assert response.status_code == 302, errors_of(response)
    assert {e.key: e.value for e in EnvValue.objects.all()} == {"B": "first", "A": "second"}
