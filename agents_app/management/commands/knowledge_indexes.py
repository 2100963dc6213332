from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django.db import connection

from agents_app.db.knowledge_search import install_fts5
from agents_app.db.knowledge_vectors import install
from agents_app.services.knowledge.search import search_indexes_description


class Command(BaseCommand):
    help = (
        "Say which indexes the knowledge search uses on this database (keywords: PostgreSQL "
        "full text or SQLite FTS5; meaning: pgvector or exact numpy search). --install: "
        "create pgvector's extension and vector table (after pgvector was added to the "
        "server) and copy the stored embeddings in, or SQLite's FTS5 table."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--install", action="store_true", help="create what is missing")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["install"]:
            install(connection)
            install_fts5(connection)
        self.stdout.write(search_indexes_description())
