# Feedback on replies (issue #42): a person's rating of an assistant reply, and the reasons
# an agent offers.
import uuid

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('agents_app', '0018_automation'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name='agent',
            name='feedback_reasons',
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.CreateModel(
            name='Feedback',
            fields=[
                ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                ('score', models.SmallIntegerField(choices=[(1, '👍'), (-1, '👎')])),
                ('reason', models.CharField(blank=True, max_length=100)),
                ('comment', models.TextField(blank=True)),
                ('definition_versions', models.JSONField(blank=True, default=dict)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('updated_at', models.DateTimeField(auto_now=True)),
                ('agent', models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='agents_app.agent')),
                ('message', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='feedback', to='agents_app.message')),
                ('thread', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='agents_app.thread')),
                ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'verbose_name_plural': 'feedback',
                'indexes': [models.Index(fields=['agent', '-created_at'], name='feedback_agent_time')],
                'constraints': [models.UniqueConstraint(fields=('message', 'user'), name='uniq_feedback_per_user')],
            },
        ),
    ]
