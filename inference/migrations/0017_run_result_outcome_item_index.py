"""A run page reads its answers and failures in item order from (run, outcome, item_id) instead of sorting
all the run's results (issue 37). The new index also serves every (run, outcome) filter, so the old
(run, outcome) one goes; it is created first, so no query is ever left without one. No rows change."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('inference', '0016_run_stop_reason'),
    ]

    operations = [
        migrations.AddIndex(
            model_name='runresult',
            index=models.Index(fields=['run', 'outcome', 'item_id'], name='run_result_outcome_item'),
        ),
        migrations.RemoveIndex(
            model_name='runresult',
            name='inference_r_run_id_09cadd_idx',
        ),
    ]
