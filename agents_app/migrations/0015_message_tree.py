# The conversation tree (issue #41): every top-level message records the message it follows,
# messages off the active path are marked abandoned, and the kept count counts those apart.
# Existing conversations become linear trees: each top-level message follows the one before
# it in its thread (the order every reader already used), none is abandoned.
from django.db import migrations, models

_LINEAR_POSTGRES = """
UPDATE agents_app_message m SET follows = p.prev
FROM (SELECT id, LAG(id) OVER (PARTITION BY thread_id ORDER BY created_at) AS prev
      FROM agents_app_message WHERE depth = 0) p
WHERE m.id = p.id AND p.prev IS NOT NULL
"""

_LINEAR_SQLITE = """
UPDATE agents_app_message SET follows = (
    SELECT p.prev FROM (
        SELECT id, LAG(id) OVER (PARTITION BY thread_id ORDER BY created_at) AS prev
        FROM agents_app_message WHERE depth = 0
    ) p WHERE p.id = agents_app_message.id
) WHERE depth = 0
"""


def linear_parents(apps, schema_editor):
    sql = _LINEAR_POSTGRES if schema_editor.connection.vendor == "postgresql" else _LINEAR_SQLITE
    schema_editor.execute(sql)


class Migration(migrations.Migration):
    dependencies = [
        ("agents_app", "0014_security"),
    ]

    operations = [
        migrations.AddField(
            model_name="message",
            name="abandoned",
            field=models.BooleanField(default=False),
        ),
        migrations.AddField(
            model_name="message",
            name="follows",
            field=models.UUIDField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="threadmessagecount",
            name="abandoned",
            field=models.IntegerField(default=0),
        ),
        migrations.AddIndex(
            model_name="message",
            index=models.Index(
                condition=models.Q(("abandoned", True)),
                fields=["thread", "follows"],
                name="message_abandoned_follows",
            ),
        ),
        migrations.RunPython(linear_parents, migrations.RunPython.noop, elidable=False),
    ]
