"""Create the provisional default scoring profile (spec section 3, a documented decision)."""
from django.db import migrations

PROVISIONAL_SOURCE = (
    "Provisional default: the paper's empirically derived boundaries are not published, so "
    "lo = (0.75, 0.50, 0.25, 0.00) is a placeholder until CPRT-Bench rows are imported and fitted."
)


def create(apps, schema_editor):
    ScoringProfile = apps.get_model("scoring", "ScoringProfile")
    ScoringProfile.objects.get_or_create(
        name="provisional",
        defaults={
            "version": 1,
            "weights": [330, 30, 5, 1],
            "lo1": 0.75,
            "lo2": 0.50,
            "lo3": 0.25,
            "provisional": True,
            "source": PROVISIONAL_SOURCE,
            "is_active": True,
        },
    )


def remove(apps, schema_editor):
    apps.get_model("scoring", "ScoringProfile").objects.filter(name="provisional").delete()


class Migration(migrations.Migration):
    dependencies = [("scoring", "0001_initial")]
    operations = [migrations.RunPython(create, remove)]
