import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

import agents_app.models.user_values


class Migration(migrations.Migration):
    dependencies = [
        ("agents_app", "0025_log_error_origin"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="UserValue",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("key", models.CharField(max_length=512)),
                ("value", models.JSONField(null=True)),
                ("sealed", models.TextField(blank=True, default="")),
                (
                    "created_at",
                    models.BigIntegerField(default=agents_app.models.user_values._now_ms),
                ),
                (
                    "updated_at",
                    models.BigIntegerField(default=agents_app.models.user_values._now_ms),
                ),
                (
                    "user",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="user_values",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "ordering": ["key"],
                "constraints": [
                    models.UniqueConstraint(fields=("user", "key"), name="uniq_user_value")
                ],
            },
        ),
    ]
