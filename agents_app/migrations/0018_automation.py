# Placeholder in a chain of this round's migrations (one per concern, filled in by the
# change that needs it), so parallel work never leaves two leaf migrations.
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('agents_app', '0017_integrity'),
    ]

    operations = [
        migrations.AddField(
            model_name='agent',
            name='mid_run_messages',
            field=models.CharField(choices=[('queue', "Queue: read at the session's next step"), ('enqueue', 'Enqueue: a new turn after the session ends'), ('interrupt', 'Interrupt: stop the session, then answer'), ('reject', 'Reject: answer 409')], default='queue', max_length=16),
        ),
    ]
