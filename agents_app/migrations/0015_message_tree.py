# Placeholder in a chain of this round's migrations (one per concern, filled in by the
# change that needs it), so parallel work never leaves two leaf migrations.
from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('agents_app', '0014_security'),
    ]

    operations = []
