"""The messages page's total as an index-only scan (issue #21), on PostgreSQL.

``uniq_message_thread_time`` (thread, created_at) becomes
``UNIQUE (thread_id, created_at) INCLUDE (depth, silent)``: the same constraint and the
same index for the engine's inserts and the newest-page scan, now also holding the two
columns the page's ``COUNT(*)`` filters on, so counting a thread's 10,000 messages reads
the index alone (after VACUUM has marked the pages all-visible) instead of 10,000 rows.
Django's model state is unchanged (SQLite has no INCLUDE; the constraint stays plain
there). The constraint is rebuilt in one transaction: on a large table, run it in a
quiet window (it locks ``agents_app_message`` while the index builds).
"""

from django.db import migrations

NAME = "uniq_message_thread_time"
TABLE = "agents_app_message"


def _rebuild(include: bool):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor != "postgresql":
            return
        extra = " INCLUDE (depth, silent)" if include else ""
        schema_editor.execute(f'ALTER TABLE "{TABLE}" DROP CONSTRAINT "{NAME}"')
        schema_editor.execute(
            f'ALTER TABLE "{TABLE}" ADD CONSTRAINT "{NAME}" UNIQUE (thread_id, created_at){extra}'
        )

    return run


class Migration(migrations.Migration):
    dependencies = [
        ("agents_app", "0010_model_api_provider_tools"),
    ]

    operations = [
        migrations.RunPython(_rebuild(include=True), _rebuild(include=False), elidable=False),
    ]
