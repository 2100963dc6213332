# The knowledge search's indexes that depend on the database (docs/knowledge.md, "Which
# indexes a deployment uses"): on PostgreSQL with pgvector available, the extension and the
# vector side table with its HNSW indexes (``agents_app/db/knowledge_vectors.py``; a server
# without pgvector migrates all the same and searches vectors with numpy); on SQLite, the FTS5
# table and triggers of the keyword side (``agents_app/db/knowledge_search.py``).

from django.db import migrations


def _install(apps, schema_editor):
    from agents_app.db.knowledge_search import install_fts5
    from agents_app.db.knowledge_vectors import install

    install(schema_editor.connection)
    install_fts5(schema_editor.connection)


def _uninstall(apps, schema_editor):
    from agents_app.db.knowledge_vectors import UNINSTALL

    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(UNINSTALL)
    elif vendor == "sqlite":
        for trigger in ("knowledge_fts_insert", "knowledge_fts_delete", "knowledge_fts_update"):
            schema_editor.execute(f"DROP TRIGGER IF EXISTS {trigger}")
        schema_editor.execute("DROP TABLE IF EXISTS agents_app_knowledgechunk_fts")


class Migration(migrations.Migration):
    dependencies = [
        ("agents_app", "0035_knowledge_audience_and_provider_embeddings"),
    ]

    operations = [
        migrations.RunPython(_install, _uninstall),
    ]
