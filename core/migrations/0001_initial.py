# Profile and AuditEvent move from annotations to core. Their tables stay where annotations.0001
# created them (db_table keeps the names), so only Django's state changes: no data is copied.
import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ("annotations", "0003_labeling_queue_batches"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name="AuditEvent",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("action", models.CharField(db_index=True, max_length=64)),
                        ("target_type", models.CharField(blank=True, max_length=64)),
                        ("target_id", models.CharField(blank=True, max_length=64)),
                        ("data", models.JSONField(blank=True, default=dict)),
                        ("created_at", models.DateTimeField(auto_now_add=True, db_index=True)),
                        ("actor", models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name="+", to=settings.AUTH_USER_MODEL)),
                    ],
                    options={"ordering": ["-created_at"], "db_table": "annotations_auditevent"},
                ),
                migrations.CreateModel(
                    name="Profile",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("role", models.CharField(choices=[("reviewer", "reviewer"), ("adjudicator", "adjudicator"), ("admin", "admin")], default="reviewer", max_length=16)),
                        ("blur_images_by_default", models.BooleanField(default=True)),
                        ("user", models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name="profile", to=settings.AUTH_USER_MODEL)),
                    ],
                    options={"db_table": "annotations_profile"},
                ),
            ],
        ),
    ]
