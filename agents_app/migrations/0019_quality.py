# The quality loop (issue #42): feedback on replies (a person's rating, the reasons an agent
# offers) and evals (datasets of cases, runs of an agent version over them, their results).
import uuid
from decimal import Decimal

import django.core.validators
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
                ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'verbose_name_plural': 'feedback',
                'indexes': [models.Index(fields=['agent', '-created_at'], name='feedback_agent_time')],
                'constraints': [models.UniqueConstraint(fields=('message', 'user'), name='uniq_feedback_per_user')],
            },
        ),
        migrations.CreateModel(
            name='EvalDataset',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(max_length=128, unique=True)),
                ('description', models.TextField(blank=True)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
            ],
        ),
        migrations.CreateModel(
            name='EvalCase',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(max_length=200)),
                ('messages', models.JSONField(default=list)),
                ('env', models.JSONField(blank=True, default=dict)),
                ('checks', models.JSONField(blank=True, default=list)),
                ('notes', models.TextField(blank=True)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('source_message', models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='agents_app.message')),
                ('dataset', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='cases', to='agents_app.evaldataset')),
            ],
            options={
                'ordering': ['dataset', 'id'],
            },
        ),
        migrations.CreateModel(
            name='EvalRun',
            fields=[
                ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                ('agent', models.CharField(max_length=128)),
                ('versions', models.JSONField(blank=True, default=dict)),
                ('pins', models.JSONField(blank=True, default=dict)),
                ('label', models.CharField(blank=True, max_length=200)),
                ('concurrency', models.PositiveSmallIntegerField(default=4)),
                ('status', models.CharField(choices=[('running', 'Running'), ('completed', 'Completed'), ('cancelled', 'Cancelled')], default='running', max_length=16)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('finished_at', models.DateTimeField(blank=True, null=True)),
                ('created_by', models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('dataset', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='runs', to='agents_app.evaldataset')),
            ],
            options={
                'ordering': ['-created_at'],
            },
        ),
        migrations.CreateModel(
            name='EvalResult',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('status', models.CharField(choices=[('pending', 'Pending'), ('running', 'Running'), ('judging', 'Judging'), ('passed', 'Passed'), ('failed', 'Failed'), ('error', 'Error'), ('cancelled', 'Cancelled')], default='pending', max_length=16)),
                ('score', models.FloatField(blank=True, null=True)),
                ('checks', models.JSONField(blank=True, default=list)),
                ('answer', models.TextField(blank=True)),
                ('cost', models.DecimalField(decimal_places=8, default=0, max_digits=14)),
                ('latency_ms', models.IntegerField(blank=True, null=True)),
                ('started_at', models.DateTimeField(blank=True, null=True)),
                ('finished_at', models.DateTimeField(blank=True, null=True)),
                ('case', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='results', to='agents_app.evalcase')),
                ('judge_thread', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='agents_app.thread')),
                ('thread', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='agents_app.thread')),
                ('run', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='results', to='agents_app.evalrun')),
            ],
            options={
                'ordering': ['run', 'case_id'],
                'indexes': [models.Index(fields=['run', 'status'], name='eval_result_run_status')],
                'constraints': [models.UniqueConstraint(fields=('run', 'case'), name='uniq_eval_result_per_case')],
            },
        ),
        # What the chat shows people of tool calls (issue #40 item 10).
        migrations.AddField(
            model_name='agent',
            name='tool_activity',
            field=models.CharField(blank=True, choices=[('hidden', 'Hidden: only the answers'), ('summary', 'Summary: one line per tool call'), ('full', "Full: each call's arguments and result")], max_length=16),
        ),
        # AgentBuilder's maxTurns: the turns a side may take, a field of its own (issue #38).
        migrations.AddField(
            model_name='agent',
            name='side_a_max_turns',
            field=models.IntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='agent',
            name='side_b_max_turns',
            field=models.IntegerField(blank=True, null=True),
        ),
        # setValue's exact value, sealed, when it held a secret (issue #38 item 8).
        migrations.AddField(
            model_name='threadvalue',
            name='sealed',
            field=models.TextField(blank=True, default=''),
        ),
        # A negative spend budget is refused (issue #40 item 6).
        migrations.AlterField(
            model_name='spendbudget',
            name='monthly_limit_usd',
            field=models.DecimalField(blank=True, decimal_places=2, help_text="New sessions are refused once this month's spend reaches it. Empty: no budget (even when a default is set in settings).", max_digits=12, null=True, validators=[django.core.validators.MinValueValidator(Decimal('0'), message='A budget cannot be negative. Enter 0 to refuse every new session, or leave it empty for no budget.')], verbose_name='monthly limit (USD)'),
        ),
    ]
