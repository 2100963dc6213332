# Placeholder in a chain of this round's migrations (one per concern, filled in by the
# change that needs it), so parallel work never leaves two leaf migrations.
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('agents_app', '0013_thread_message_count'),
    ]

    operations = [
        # WebSocket tickets remember the credential that minted them (sockets follow their
        # credentials: agents_app/services/socket_credentials.py).
        migrations.AddField(
            model_name='websocketticket',
            name='credential',
            field=models.CharField(blank=True, default='', max_length=100),
        ),
    ]
