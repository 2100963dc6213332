# Placeholder in a chain of this round's migrations (one per concern, filled in by the
# change that needs it), so parallel work never leaves two leaf migrations.
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("agents_app", "0013_thread_message_count"),
    ]

    operations = [
        # The egress key rule: the instance key goes to a foreign base URL only when a
        # superuser says so (runtime/core/egress.py, agents_app/services/definitions/model_catalog.py).
        migrations.AddField(
            model_name="languagemodel",
            name="send_instance_key_to_base_url",
            field=models.BooleanField(
                default=False,
                help_text="Send the instance's API key for this provider to the base URL above although it is not the vendor's own host (superusers only).",
            ),
        ),
        # WebSocket tickets remember the credential that minted them (sockets follow their
        # credentials: agents_app/services/access/socket_credentials.py).
        migrations.AddField(
            model_name="websocketticket",
            name="credential",
            field=models.CharField(blank=True, default="", max_length=100),
        ),
    ]
