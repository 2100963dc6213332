"""The studio's retention page: one policy row, saved like any admin form, refused when it
could not apply as written, and honoured by the retention task over the server settings."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.test import Client
from django.urls import reverse

from agents_app.models import Log, RetentionPolicy, Thread
from agents_app.tasks.retention_tasks import apply_retention
from tests.agents_app.admin.admin_pages import errors_of, fill, post, read_form
from tests.agents_app.services.retention_support import fill as fill_threads
from tests.agents_app.services.retention_support import make_agent, make_threads

pytestmark = pytest.mark.django_db(transaction=True)
LIST = reverse("admin:agents_app_retentionpolicy_changelist")
PAGE = reverse("admin:agents_app_retentionpolicy_change", args=[RetentionPolicy.SINGLETON_ID])


@pytest.fixture
def staff(client: Client, ops: Any) -> Client:
    client.force_login(ops)
    return client


def test_the_page_is_the_single_policy_row_no_list_no_add_no_delete(staff: Client) -> None:
    response = staff.get(LIST)
    assert response.status_code == 302 and response["Location"] == PAGE
    page = staff.get(PAGE).content.decode()
    assert "server setting" in page and "kept forever" in page
    assert staff.get(reverse("admin:agents_app_retentionpolicy_add")).status_code == 403
    delete = reverse("admin:agents_app_retentionpolicy_delete", args=[RetentionPolicy.SINGLETON_ID])
    assert staff.get(delete).status_code == 403
    assert RetentionPolicy.objects.count() == 1


def test_saving_the_page_overrides_the_settings_and_the_task_honours_it(
    staff: Client, settings: Any
) -> None:
    settings.STUDIO_RETENTION_THREAD_DAYS = 0  # the server keeps threads forever
    settings.STUDIO_RETENTION_LOG_BODY_DAYS = 0
    agent = make_agent()
    old = make_threads(agent, 3, idle_days=100)
    recent = make_threads(agent, 2, idle_days=1)
    fill_threads(old + recent, messages=2, logs={20: 2}, values=1)
    staff.get(LIST)
    response = post(staff, PAGE, fill(read_form(staff, PAGE), thread_days="30", log_body_days="10"))
    assert response.status_code == 302, errors_of(response)
    row = RetentionPolicy.objects.get()
    assert (row.thread_days, row.log_days, row.log_body_days) == (30, None, 10)
    page = staff.get(PAGE).content.decode()
    assert "this page" in page and "30 days" in page

    summary = apply_retention()

    assert set(Thread.objects.values_list("pk", flat=True)) == {t.pk for t in recent}
    assert "deleted 3 agents_app.Thread" in summary
    assert not Log.objects.filter(request_body__isnull=False).exists()
    assert "trimmed the bodies of 4 logs" in staff.get(PAGE).content.decode()


def test_a_policy_that_could_not_apply_as_written_is_refused(staff: Client) -> None:
    staff.get(LIST)
    data = fill(read_form(staff, PAGE), log_days="60", log_body_days="90")
    response = post(staff, PAGE, data)
    assert response.status_code == 200
    assert "trim sooner than logs are deleted" in response.content.decode()
    row = RetentionPolicy.objects.get()
    assert (row.log_days, row.log_body_days) == (None, None)


def test_a_studio_period_of_zero_keeps_forever_over_a_server_setting(
    staff: Client, settings: Any
) -> None:
    settings.STUDIO_RETENTION_THREAD_DAYS = 30
    agent = make_agent()
    make_threads(agent, 2, idle_days=100)
    staff.get(LIST)
    assert post(staff, PAGE, fill(read_form(staff, PAGE), thread_days="0")).status_code == 302
    apply_retention()
    assert Thread.objects.count() == 2


def test_server_settings_that_could_not_apply_stop_the_start_up(settings: Any) -> None:
    settings.STUDIO_RETENTION_LOG_DAYS = -1
    with pytest.raises(SystemCheckError, match="log_days must be 0 or more"):
        call_command("check")
    settings.STUDIO_RETENTION_LOG_DAYS = 30
    settings.STUDIO_RETENTION_LOG_BODY_DAYS = 30
    with pytest.raises(SystemCheckError, match="trim sooner than logs are deleted"):
        call_command("check")
