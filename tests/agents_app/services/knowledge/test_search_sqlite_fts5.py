"""Knowledge search in the embedded set-up, on SQLite (docs/knowledge.md, "Which indexes a
deployment uses"): the keyword side is FTS5 (BM25 over a table kept by triggers, created by
migration ``0036``), the vector side exact numpy search. The same hybrid cases as on
PostgreSQL hold; FTS5 stems ("ordering" finds "orders"); a query's FTS5 syntax is only words;
a deleted document leaves nothing in the FTS5 table; a table rebuild that dropped the
triggers is repaired by the next ``migrate``.

Run in a ``manage.py shell`` on a copy of the migrated SQLite template (the suite's database is
PostgreSQL), as ``tests/agents_app/db/test_message_counts.py`` does.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from agents_app.db.knowledge_search import FTS_TABLE, FTS_TRIGGERS, fts5_query
from tests.agents_app.process.manage_support import manage as run_manage
from tests.integration.stack import sqlite_database

_SCRIPT = """
import tempfile
from django.db import connection
from django.test import override_settings
from agents_app.db.knowledge_search import FTS_TABLE, has_full_text
from agents_app.models import KnowledgeBase
from agents_app.services.knowledge.documents import document_add, document_delete
from agents_app.services.knowledge.ingestion import document_ingest
from agents_app.services.knowledge.search import (
    Filters, NumpyVectors, keyword_ranking, search, search_indexes_description, vector_index,
)
from tests.agents_app.services.knowledge.test_search import HANDBOOK, RETURNS

def words(query):
    return keyword_ranking(base, query, 50, Filters())

with override_settings(MEDIA_ROOT=tempfile.mkdtemp()):
    base = KnowledgeBase.objects.create(name="handbook")
    docs = {}
    for name, data in (("handbook.md", HANDBOOK), ("returns.md", RETURNS)):
        docs[name] = document_add(base=base, filename=name, content_type="", data=data)
        assert document_ingest(docs[name].pk) == "ready"
    assert has_full_text() and isinstance(vector_index(), NumpyVectors)
    print("indexes:", search_indexes_description())

    [kitchen] = words("Okonkwo orders")
    top = search(base, "Okonkwo orders", k=3)
    assert top[0].chunk_id == kitchen and top[0].keyword_rank == 1, top
    assert words("Okonkwo ordering") == [kitchen]  # Porter stemming
    assert words('Okonkwo" OR kitchen NEAR(') == [kitchen]  # words, any; no FTS5 syntax
    assert len(words("kitchen")) == 1 and words("the and of") == []

    paraphrase = "what if I regret buying something"
    assert words(paraphrase) == []
    top = search(base, paraphrase, k=3)
    assert top[0].document_title == "returns" and (top[0].keyword_rank, top[0].vector_rank) == (
        None, 1,
    ), top
    only = Filters(document_ids=[docs["returns.md"].pk])
    assert keyword_ranking(base, "Okonkwo orders", 50, only) == []

    document_delete(document=docs["handbook.md"])
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH 'okonkwo'")
        assert cursor.fetchone()[0] == 0
        cursor.execute(f"SELECT count(*) FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH 'refund'")
        assert cursor.fetchone()[0] == 1
print("fts5 ok")
"""


def test_fts5_is_the_keyword_side_on_sqlite_and_survives_a_table_rebuild(tmp_path: Path) -> None:
    db = tmp_path / "knowledge.sqlite3"
    sqlite_database(db, dict(os.environ), seeded=False)
    done = run_manage("shell", "-c", _SCRIPT, database_url=f"sqlite:///{db}")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "fts5 ok" in done.stdout
    assert "Keywords: SQLite FTS5 (BM25). Meaning: exact search with numpy" in done.stdout

    # Django alters a SQLite table by rebuilding it, which drops its triggers: the next
    # migrate puts them back and rebuilds the index from the chunks.
    con = sqlite3.connect(db)
    con.execute(f"DROP TRIGGER {FTS_TRIGGERS[0]}")
    con.execute(f"INSERT INTO {FTS_TABLE} ({FTS_TABLE}) VALUES ('delete-all')")
    con.commit()
    done = run_manage("migrate", "--noinput", database_url=f"sqlite:///{db}")
    assert done.returncode == 0, done.stdout + done.stderr
    names = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
    found = con.execute(f"SELECT count(*) FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH 'refund'")
    count = found.fetchone()[0]
    con.close()
    assert set(FTS_TRIGGERS) <= names and count == 1


def test_an_fts5_query_is_the_words_only() -> None:
    assert fts5_query('Okonkwo" OR NEAR(kitchen') == '"okonkwo" OR "near" OR "kitchen"'
    assert fts5_query("the and of") == ""
