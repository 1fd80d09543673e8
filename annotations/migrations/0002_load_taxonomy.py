"""Load the project's taxonomy file (annotations/data/taxonomy.json) as taxonomy version 1."""
import json
from pathlib import Path

from django.db import migrations

# A frozen copy travels with the migration through annotations/data; later versions get their own migration.
TAXONOMY_FILE = Path(__file__).resolve().parent.parent / "data" / "taxonomy.json"


def load(apps, schema_editor):
    TaxonomyVersion = apps.get_model("annotations", "TaxonomyVersion")
    Level = apps.get_model("annotations", "Level")
    Attribute = apps.get_model("annotations", "Attribute")
    data = json.loads(TAXONOMY_FILE.read_text(encoding="utf-8"))
    tv, created = TaxonomyVersion.objects.get_or_create(version=str(data["version"]), defaults={"name": data["name"], "source": data})
    if not created:
        return
    Level.objects.bulk_create(
        [Level(taxonomy=tv, number=lv["level"], name=lv["name"], description=lv["description"]) for lv in data["levels"]]
    )
    Attribute.objects.bulk_create(
        [Attribute(taxonomy=tv, key=a["key"], level=a["level"], order=a["order"], question=a["question"]) for a in data["attributes"]]
    )


def unload(apps, schema_editor):
    apps.get_model("annotations", "TaxonomyVersion").objects.filter(version="1").delete()


class Migration(migrations.Migration):
    dependencies = [("annotations", "0001_initial")]
    operations = [migrations.RunPython(load, unload)]
