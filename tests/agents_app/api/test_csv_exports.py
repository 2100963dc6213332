"""CSV exports neutralise formulas in every cell (issue #52): whatever a person wrote (a
feedback reason from an agent's definition, a comment, a username, a reply) and starts like
a spreadsheet formula is exported with a leading ``'``, read back through the studio's real
export URL (docs/observability.md, "Feedback on replies")."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from agents_app.base import spreadsheets
from agents_app.models import Message
from agents_app.orchestration.thread_creation import thread_create
from agents_app.services.definitions.saves import save_definitions
from agents_app.services.threads import feedback as feedback_service
from runtime.core.spec import AgentDefinition
from tests.agents_app.api.api_support import _api_hosts, define_agent  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)

# OWASP's CSV injection starts, each as a reason, a comment, a username and a reply.
FORMULAS = ['=HYPERLINK("http://evil.example","open")', "+1", "-1", "@SUM(A1:A9)", "\t=1", "\r=1"]


def test_every_csv_cell_a_spreadsheet_would_run_is_neutralised() -> None:
    define_agent("helper")
    agent = AgentDefinition.model_validate(
        {
            "name": "helper",
            "type": "ai_human",
            "sideA": {"prompt": "helper-prompt"},
            "feedbackReasons": FORMULAS,
        }
    )
    save_definitions([("agent", agent)], strict_code_names=False)
    users = get_user_model().objects
    for index, formula in enumerate(FORMULAS):
        # create_user does not validate: an SSO or a script may name an account anything.
        person = users.create_user(username=f"{formula}{index}", password="pw-for-tests-1")
        thread = thread_create(user=person, agent_name="helper")
        reply = Message.objects.create(thread=thread, role="assistant", content=formula)
        feedback_service.feedback_set(
            thread=thread,
            message_id=str(reply.pk),
            user=person,
            rating=feedback_service.Rating(-1, formula, formula),
        )
    studio = Client()
    studio.force_login(users.create_superuser("ops", password="pw-for-tests-1"))

    export = studio.get("/admin/agents_app/feedback/export.csv")

    assert export.status_code == 200 and export["Content-Type"] == "text/csv"
    rows = list(csv.DictReader(io.StringIO(export.content.decode(), newline="")))
    assert len(rows) == len(FORMULAS)
    for row in rows:
        for column in ("reason", "comment", "reply"):
            assert row[column] in ["'" + f for f in FORMULAS], (column, row[column])
        assert row["user"].startswith("'") and row["user"][1:-1] in FORMULAS
        assert row["score"] == "-1"  # a number the export writes stays a number
        texts = [cell for column, cell in row.items() if column != "score"]
        assert not [t for t in texts if t.startswith(spreadsheets.FORMULA_STARTS)], row
    assert {r["reason"] for r in rows} == {"'" + f for f in FORMULAS}


def test_every_csv_export_goes_through_the_one_neutralising_writer() -> None:
    # A new export that wrote its own csv.writer would skip the neutralising: there is one.
    app = Path(__file__).resolve().parents[3] / "agents_app"
    writers = [
        str(path.relative_to(app))
        for path in app.rglob("*.py")
        if re.search(r"csv\.(writer|DictWriter)\(", path.read_text())
    ]
    assert writers == ["base/spreadsheets.py"]
    source = (app / "base" / "spreadsheets.py").read_text()
    assert source.count("csv.writer(") == 1 and "csv.DictWriter(" not in source
    assert "csv.writer(" in source[source.index("def csv_text(") :]


def test_spreadsheet_cell() -> None:
    cell = spreadsheets.spreadsheet_cell
    assert [cell(f) for f in FORMULAS] == ["'" + f for f in FORMULAS]
    assert cell("Too long") == "Too long" and cell("") == "" and cell(None) == ""
    assert cell(-1) == -1 and cell(2.5) == 2.5
