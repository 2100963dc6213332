"""The ledger of definition fields (issue #38): no field accepted and then ignored."""

from __future__ import annotations

import re
from pathlib import Path

from agents_app.api.threads import ThreadIn
from runtime.core.a2a_agents import A2aAgentDefinition
from runtime.core.spec import AgentDefinition, ModelDefinition, PromptDefinition
from runtime.definitions.ledger import (
    DOC_BEGIN,
    DOC_END,
    LEDGER,
    missing_rows,
    render_markdown,
    schema_fields,
)
from runtime.mcp.servers import McpServerDefinition

ROOT = Path(__file__).resolve().parents[3]
ROOTS = [
    AgentDefinition,
    PromptDefinition,
    ModelDefinition,
    McpServerDefinition,
    A2aAgentDefinition,
    ThreadIn,
]
DOC = ROOT / "docs" / "definitions.md"


def test_every_field_of_every_definition_schema_has_a_ledger_row() -> None:
    missing = missing_rows(ROOTS)
    assert not missing, (
        "These definition fields have no row in runtime.definitions.ledger.LEDGER: "
        f"{', '.join(missing)}. Say where each is honoured (and the test), or refuse it."
    )


def test_the_ledger_names_no_field_the_schemas_do_not_have() -> None:
    fields = schema_fields(ROOTS)
    stale = [
        f"{schema}.{field}"
        for schema, rows in LEDGER.items()
        for field in rows
        if field not in fields.get(schema, [])
    ]
    assert not stale, f"Ledger rows for fields that no longer exist: {stale}"


def test_every_row_names_a_test_that_exists() -> None:
    absent = []
    for schema, rows in LEDGER.items():
        for field, row in rows.items():
            path, _, name = row.test.partition("::")
            source = ROOT / path
            found = source.is_file() and re.search(
                rf"^(async )?def {re.escape(name)}\(", source.read_text(), re.M
            )
            if not found:
                absent.append(f"{schema}.{field} → {row.test}")
    assert not absent, "Ledger rows naming tests that do not exist:\n" + "\n".join(absent)


def test_docs_definitions_md_shows_the_current_ledger() -> None:
    text = DOC.read_text()
    assert DOC_BEGIN in text and DOC_END in text, f"{DOC} lacks the ledger markers"
    current = text.split(DOC_BEGIN, 1)[1].split(DOC_END, 1)[0].strip()
    assert current == render_markdown().strip(), (
        "docs/definitions.md is stale: run `.venv/bin/python -m runtime.definitions.ledger`"
    )
