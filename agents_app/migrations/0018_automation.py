# Placeholder in a chain of this round's migrations (one per concern, filled in by the
# change that needs it), so parallel work never leaves two leaf migrations.
import uuid

import django.db.models.deletion
from django.conf import settings
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
        migrations.CreateModel(
            name='Schedule',
            fields=[
                ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                ('name', models.CharField(blank=True, max_length=200)),
                ('cron', models.CharField(blank=True, max_length=200)),
                ('timezone', models.CharField(default='UTC', max_length=64)),
                ('interval_seconds', models.PositiveIntegerField(blank=True, null=True)),
                ('message', models.TextField()),
                ('env', models.JSONField(blank=True, default=dict)),
                ('attachments', models.JSONField(blank=True, default=list)),
                ('target', models.CharField(choices=[('new_thread', 'A new thread each time'), ('standing_thread', 'One standing thread')], default='new_thread', max_length=16)),
                ('paused', models.BooleanField(default=False)),
                ('catch_up', models.PositiveIntegerField(default=0)),
                ('next_run_at', models.DateTimeField(blank=True, null=True)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('updated_at', models.DateTimeField(auto_now=True)),
                ('agent', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='schedules', to='agents_app.agent')),
                ('owner', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='schedules', to=settings.AUTH_USER_MODEL)),
                ('standing_thread', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='agents_app.thread')),
            ],
            options={
                'ordering': ['created_at'],
            },
        ),
        migrations.CreateModel(
            name='ScheduleRun',
            fields=[
                ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                ('due_at', models.DateTimeField()),
                ('manual', models.BooleanField(default=False)),
                ('status', models.CharField(choices=[('claimed', 'Claimed'), ('started', 'Started'), ('failed', 'Failed')], default='claimed', max_length=16)),
                ('claimed_by', models.CharField(blank=True, max_length=200)),
                ('claimed_at', models.DateTimeField()),
                ('started_at', models.DateTimeField(blank=True, null=True)),
                ('message_id', models.UUIDField(blank=True, null=True)),
                ('skipped', models.PositiveIntegerField(default=0)),
                ('error', models.TextField(blank=True)),
                ('schedule', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='runs', to='agents_app.schedule')),
                ('thread', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='schedule_runs', to='agents_app.thread')),
            ],
            options={
                'ordering': ['-due_at'],
            },
        ),
        migrations.AddIndex(
            model_name='schedule',
            index=models.Index(condition=models.Q(('paused', False)), fields=['next_run_at'], name='schedule_due'),
        ),
        migrations.AddIndex(
            model_name='schedulerun',
            index=models.Index(condition=models.Q(('status', 'claimed')), fields=['claimed_at'], name='schedule_run_claimed'),
        ),
        migrations.AddConstraint(
            model_name='schedulerun',
            constraint=models.UniqueConstraint(condition=models.Q(('manual', False)), fields=('schedule', 'due_at'), name='schedule_run_once'),
        ),
        migrations.CreateModel(
            name='WebhookSubscription',
            fields=[
                ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                ('url', models.URLField(max_length=2000)),
                ('secret_env', models.CharField(max_length=128)),
                ('events', models.JSONField(default=list)),
                ('active', models.BooleanField(default=True)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('agent', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='webhooks', to='agents_app.agent')),
            ],
            options={
                'ordering': ['created_at'],
            },
        ),
        migrations.CreateModel(
            name='WebhookDelivery',
            fields=[
                ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                ('event', models.CharField(max_length=64)),
                ('subject', models.CharField(max_length=200)),
                ('payload', models.JSONField()),
                ('status', models.CharField(choices=[('pending', 'Pending'), ('delivering', 'Delivering'), ('delivered', 'Delivered'), ('failed', 'Failed')], default='pending', max_length=16)),
                ('attempts', models.PositiveIntegerField(default=0)),
                ('response_code', models.IntegerField(blank=True, null=True)),
                ('error', models.TextField(blank=True)),
                ('next_attempt_at', models.DateTimeField()),
                ('claimed_at', models.DateTimeField(blank=True, null=True)),
                ('delivered_at', models.DateTimeField(blank=True, null=True)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('subscription', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='deliveries', to='agents_app.webhooksubscription')),
            ],
            options={
                'verbose_name_plural': 'webhook deliveries',
                'ordering': ['-created_at'],
                'indexes': [models.Index(condition=models.Q(('status', 'pending')), fields=['next_attempt_at'], name='webhook_due')],
                'constraints': [models.UniqueConstraint(fields=('subscription', 'event', 'subject'), name='webhook_delivery_once')],
            },
        ),
        migrations.CreateModel(
            name='Trigger',
            fields=[
                ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                ('name', models.CharField(blank=True, max_length=200)),
                ('token_hash', models.CharField(max_length=64, unique=True)),
                ('token_prefix', models.CharField(max_length=12)),
                ('template', models.TextField()),
                ('secret_env', models.CharField(blank=True, max_length=128)),
                ('revoked_at', models.DateTimeField(blank=True, null=True)),
                ('last_used_at', models.DateTimeField(blank=True, null=True)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('agent', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='triggers', to='agents_app.agent')),
                ('owner', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='triggers', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'ordering': ['created_at'],
            },
        ),
    ]
