from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("agents_app", "0024_handler_sides"),
    ]

    operations = [
        migrations.AddField(
            model_name="log",
            name="error_origin",
            field=models.CharField(blank=True, default="", max_length=255),
        ),
    ]
