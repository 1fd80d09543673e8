# Profile and AuditEvent now belong to core (core.0001 took over their state); the tables stay.
from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("annotations", "0003_labeling_queue_batches"),
        ("core", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.DeleteModel(name="AuditEvent"),
                migrations.DeleteModel(name="Profile"),
            ],
        ),
    ]
