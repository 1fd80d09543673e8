"""Assisted labels (issue 38): a labeling records whether model suggestions were in view, from which models, and the
suggestion shown per attribute.

Labelings written before this migration recorded none of it. The backfill is conservative, for the study's sake: a
human labeling of an image whose batch shows suggestions now, with labels of the shown models written before the
labeling was last saved, is marked assisted (the suggestions could have been in view; the page showed them whenever
the batch had them on). Every row is kept; only the three new fields are filled."""
from django.db import migrations, models

def _shown_value(values):
    """The suggestion row's value (annotations/services/page.py `suggested_value`): the value most models gave, a tie Unsure."""
    counts = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    top = max(counts.values())
    winners = [v for v, n in counts.items() if n == top]
    return winners[0] if len(winners) == 1 else 0.5


def backfill(apps, schema_editor):
    Labeling = apps.get_model("annotations", "Labeling")
    Label = apps.get_model("annotations", "Label")
    Batch = apps.get_model("annotations", "Batch")
    for batch in Batch.objects.filter(show_model_suggestions=True):
        chosen = list(batch.suggestion_annotators.values_list("pk", flat=True))
        labelings = Labeling.objects.filter(image__batch=batch, annotator__kind="human").exclude(status="skipped")
        for labeling in labelings.iterator():
            until = labeling.submitted_at or labeling.updated_at
            labels = Label.objects.filter(image_id=labeling.image_id, annotator__kind="model", created_at__lte=until)
            if chosen:
                labels = labels.filter(annotator_id__in=chosen)
            rows = list(labels.values_list("annotator__name", "attribute__key", "value"))
            if not rows:
                continue
            per_key = {}
            for _, key, value in rows:
                per_key.setdefault(key, []).append(value)
            Labeling.objects.filter(pk=labeling.pk).update(
                assisted=True, suggestions_seen=sorted({name for name, _, _ in rows}),
                suggested_values={key: _shown_value(values) for key, values in sorted(per_key.items())})


class Migration(migrations.Migration):

    dependencies = [
        ('annotations', '0011_label_writes'),
    ]

    operations = [
        migrations.AddField(
            model_name='historicallabeling',
            name='assisted',
            field=models.BooleanField(default=False, help_text='Model suggestions were in view while the reviewer answered.'),
        ),
        migrations.AddField(
            model_name='historicallabeling',
            name='suggested_values',
            field=models.JSONField(blank=True, default=dict, help_text='attribute key -> the suggestion shown (0/0.5/1)'),
        ),
        migrations.AddField(
            model_name='historicallabeling',
            name='suggestions_seen',
            field=models.JSONField(blank=True, default=list, help_text='Names of the model annotators whose suggestions were in view.'),
        ),
        migrations.AddField(
            model_name='labeling',
            name='assisted',
            field=models.BooleanField(default=False, help_text='Model suggestions were in view while the reviewer answered.'),
        ),
        migrations.AddField(
            model_name='labeling',
            name='suggested_values',
            field=models.JSONField(blank=True, default=dict, help_text='attribute key -> the suggestion shown (0/0.5/1)'),
        ),
        migrations.AddField(
            model_name='labeling',
            name='suggestions_seen',
            field=models.JSONField(blank=True, default=list, help_text='Names of the model annotators whose suggestions were in view.'),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
    ]
