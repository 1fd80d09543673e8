"""MultiPriv's models (Person, PersonImage, PersonPair) moved to their benchmark's folder,
benchmarks/multipriv (issue 35). Their tables keep their names (the new models' `db_table`), so no row
moves: this removes the models from annotations' state only (multipriv/0001_initial created them in
its state first), and moves their content types to the app label `multipriv`, so that permissions
and admin history follow them. No model of another app has a foreign key to them (a run keeps its
items' ids as plain ids), so nothing else changes.

It runs after inference/0015, whose data migration reads annotations.Person from the state."""

from django.db import migrations

MODELS = ("person", "personimage", "personpair")


def _move_content_types(apps, old: str, new: str) -> None:
    ContentType = apps.get_model("contenttypes", "ContentType")
    for model in MODELS:
        if ContentType.objects.filter(app_label=new, model=model).exists():
            continue  # already there (a database that met the new code before this migration): keep it
        ContentType.objects.filter(app_label=old, model=model).update(app_label=new)


def forwards(apps, schema_editor):
    _move_content_types(apps, "annotations", "multipriv")


def backwards(apps, schema_editor):
    _move_content_types(apps, "multipriv", "annotations")


class Migration(migrations.Migration):

    dependencies = [
        ('annotations', '0012_labeling_assisted'),
        ('multipriv', '0001_initial'),
        ('inference', '0015_run_truth_frozen_at_launch'),
        ('contenttypes', '0002_remove_content_type_name'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name='PersonPair'),
                migrations.DeleteModel(name='PersonImage'),
                migrations.DeleteModel(name='Person'),
            ],
            database_operations=[],
        ),
        migrations.RunPython(forwards, backwards),
    ]
