# Placeholder in a chain of this round's migrations (one per concern, filled in by the
# change that needs it), so parallel work never leaves two leaf migrations.
# Agents get a state (draft / published) and an audience (chosen groups; none: everyone).
# Existing agents become published for everyone, so nothing changes for them (issue #40).
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('auth', '0012_alter_user_first_name_max_length'),
        ('agents_app', '0015_message_tree'),
    ]

    operations = [
        migrations.AddField(
            model_name='agent',
            name='state',
            field=models.CharField(choices=[('draft', "Draft (staff only)"), ('published', 'Published')], default='published', max_length=16),
        ),
        migrations.AddField(
            model_name='agent',
            name='audience_groups',
            field=models.ManyToManyField(blank=True, related_name='offered_agents', to='auth.group'),
        ),
    ]
