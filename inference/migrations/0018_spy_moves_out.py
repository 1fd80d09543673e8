"""SPY-Bench's models (SpySet, SpyItem, SpyRow, SpyImport) moved into benchmarks/spy_bench/ (app label
spy_bench) with their tables: removed from inference's state only (spy_bench 0001_initial holds them
now, same tables), and their content types (with their permissions) move to the spy_bench label.
No foreign key of inference points at them (a run's items are plain ids), so none is altered."""
from django.db import migrations, models

MODELS = ("spyset", "spyitem", "spyrow", "spyimport")


def move_content_types(apps, schema_editor, old="inference", new="spy_bench"):
    ContentType = apps.get_model("contenttypes", "ContentType")
    db = schema_editor.connection.alias
    for model in MODELS:
        moving = ContentType.objects.using(db).filter(app_label=old, model=model)
        if not moving.exists():
            continue  # a new database: content types are made after migrating
        if ContentType.objects.using(db).filter(app_label=new, model=model).exists():
            # made already under the new label (a partial earlier migrate): keep the old row's id, which
            # permissions, admin log entries and generic relations point at
            ContentType.objects.using(db).filter(app_label=new, model=model).delete()
        moving.update(app_label=new)


def move_content_types_back(apps, schema_editor):
    move_content_types(apps, schema_editor, old="spy_bench", new="inference")


class Migration(migrations.Migration):

    dependencies = [
        ('contenttypes', '0002_remove_content_type_name'),
        ('inference', '0017_run_result_outcome_item_index'),
        ('spy_bench', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.DeleteModel(name='SpyRow'),
                migrations.DeleteModel(name='SpyImport'),
                migrations.DeleteModel(name='SpyItem'),
                migrations.DeleteModel(name='SpySet'),
            ],
        ),
        migrations.RunPython(move_content_types, move_content_types_back),
        migrations.AlterField(  # help text only (it named SPY-Bench)
            model_name='run',
            name='options',
            field=models.JSONField(blank=True, default=dict, help_text="Kind-specific launch options, validated by the kind (its launch form's cleaned data)."),
        ),
    ]
