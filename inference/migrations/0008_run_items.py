"""Run items: a run's units of work are item ids its kind defines (annotate, judge: the image ids).

Run.item_ids and Run.options; RunResult and BatchRequest gain item_id (unique per run, resp. per
run and stage) and keep their image as the item's primary image; RunLane deals item ids. Existing
rows get item id = image id, which is what their kinds' items are.
"""
import django.db.models.deletion
from django.db import migrations, models


def items_are_images(apps, schema_editor):
    Run = apps.get_model("inference", "Run")
    RunResult = apps.get_model("inference", "RunResult")
    BatchRequest = apps.get_model("inference", "BatchRequest")
    for run in Run.objects.only("pk", "image_ids").iterator():
        Run.objects.filter(pk=run.pk).update(item_ids=sorted(run.image_ids or []))
    RunResult.objects.update(item_id=models.F("image_id"))
    BatchRequest.objects.update(item_id=models.F("image_id"))


class Migration(migrations.Migration):

    dependencies = [
        ("annotations", "0005_face_variants_and_anonymization_jobs"),
        ("inference", "0007_run_task_is_a_kind"),
    ]

    operations = [
        migrations.AddField(
            model_name="run", name="item_ids",
            field=models.JSONField(default=list, help_text="The frozen list of the run's item ids, as its kind defines them at launch (annotate, judge: the image ids)."),
        ),
        migrations.AddField(
            model_name="run", name="options",
            field=models.JSONField(blank=True, default=dict, help_text="Kind-specific launch options, validated by the kind (e.g. SPY-Bench's set and judge model)."),
        ),
        migrations.AddField(
            model_name="runresult", name="item_id",
            field=models.PositiveBigIntegerField(null=True, help_text="The item this result is for (its kind defines it; annotate, judge: the image id)."),
        ),
        migrations.AddField(
            model_name="batchrequest", name="item_id",
            field=models.PositiveBigIntegerField(null=True, help_text="The run's item (its kind defines it; annotate, judge: the image id)."),
        ),
        migrations.RenameField(model_name="runlane", old_name="image_ids", new_name="item_ids"),
        migrations.RunPython(items_are_images, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="runresult", name="item_id",
            field=models.PositiveBigIntegerField(help_text="The item this result is for (its kind defines it; annotate, judge: the image id)."),
        ),
        migrations.AlterField(
            model_name="batchrequest", name="item_id",
            field=models.PositiveBigIntegerField(help_text="The run's item (its kind defines it; annotate, judge: the image id)."),
        ),
        migrations.RemoveConstraint(model_name="runresult", name="one_result_per_run_image"),
        migrations.AddConstraint(
            model_name="runresult",
            constraint=models.UniqueConstraint(fields=("run", "item_id"), name="one_result_per_run_item"),
        ),
        migrations.AddIndex(model_name="runresult", index=models.Index(fields=["run", "image"], name="run_result_run_image")),
        migrations.RemoveConstraint(model_name="batchrequest", name="one_batch_request_per_stage"),
        migrations.AddConstraint(
            model_name="batchrequest",
            constraint=models.UniqueConstraint(fields=("run", "item_id", "stage"), name="one_batch_request_per_item_stage"),
        ),

        migrations.AlterField(
            model_name='batchrequest',
            name='image',
            field=models.ForeignKey(help_text="The item's primary image.", on_delete=django.db.models.deletion.CASCADE, related_name='+', to='annotations.image'),
        ),
        migrations.AlterField(
            model_name='runlane',
            name='item_ids',
            field=models.JSONField(default=list, help_text="The run's items dealt to this lane (fixed at launch)."),
        ),
        migrations.AlterField(
            model_name='runresult',
            name='image',
            field=models.ForeignKey(help_text="The item's primary image (several items of a run may share one).", on_delete=django.db.models.deletion.CASCADE, related_name='run_results', to='annotations.image'),
        ),
    ]
