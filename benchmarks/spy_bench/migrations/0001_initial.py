"""SPY-Bench's models move here from the inference app with their tables (inference_spy*, kept by
Meta.db_table): this creates them in Django's state only; inference 0018_spy_moves_out removes them
from inference's state and moves their content types. No table or row is touched."""
import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('annotations', '0012_labeling_assisted'),
        ('inference', '0017_run_result_outcome_item_index'),  # the tables exist (inference 0011) before the state moves
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name='SpySet',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('name', models.CharField(max_length=200, unique=True)),
                        ('label2text', models.JSONField(help_text='label -> its text (label2text.json), as imported.')),
                        ('source', models.JSONField(blank=True, default=dict, help_text='The imported files (names, sha256) and what was skipped.')),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ],
                    options={
                        'db_table': 'inference_spyset',
                        'ordering': ['name'],
                    },
                ),
                migrations.CreateModel(
                    name='SpyItem',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('position', models.PositiveIntegerField(help_text="Its place in the benchmark file's benchmark_list.")),
                        ('benchmark_id', models.CharField(help_text="Upstream's benchmark_id, as text (data keeps its JSON type).", max_length=100)),
                        ('label', models.CharField(db_index=True, max_length=64)),
                        ('source', models.TextField(help_text='The benchmark item, verbatim (JSON text, key order kept).')),
                        ('image', models.ForeignKey(help_text='The VISPR test image its question_item.image_path names.', on_delete=django.db.models.deletion.CASCADE, related_name='spy_items', to='annotations.image')),
                        ('spy_set', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='items', to='spy_bench.spyset')),
                    ],
                    options={
                        'db_table': 'inference_spyitem',
                        'ordering': ['spy_set', 'position'],
                    },
                ),
                migrations.CreateModel(
                    name='SpyImport',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('name', models.CharField(max_length=200)),
                        ('model_name', models.CharField(max_length=200)),
                        ('judge_model', models.CharField(blank=True, max_length=200)),
                        ('distractors', models.BooleanField(default=False)),
                        ('rows', models.JSONField(default=list, help_text='The evaluated rows, as imported.')),
                        ('report', models.JSONField(default=dict, help_text='Metrics, per label, per scenario and intervals (computed on import).')),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                        ('spy_set', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='imports', to='spy_bench.spyset')),
                    ],
                    options={
                        'db_table': 'inference_spyimport',
                        'ordering': ['-created_at'],
                    },
                ),
                migrations.CreateModel(
                    name='SpyRow',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('index', models.PositiveSmallIntegerField()),
                        ('is_privacy', models.PositiveSmallIntegerField()),
                        ('scenario', models.CharField(blank=True, help_text='The scenario id; empty: no scenario.', max_length=100)),
                        ('scenario_is_privacy', models.PositiveSmallIntegerField(blank=True, null=True)),
                        ('item', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='rows', to='spy_bench.spyitem')),
                    ],
                    options={
                        'db_table': 'inference_spyrow',
                        'ordering': ['item', 'index'],
                        'constraints': [models.UniqueConstraint(fields=('item', 'index'), name='one_spy_row_per_item_index')],
                    },
                ),
                migrations.AddConstraint(
                    model_name='spyitem',
                    constraint=models.UniqueConstraint(fields=('spy_set', 'benchmark_id'), name='one_spy_item_per_benchmark_id'),
                ),
            ],
        ),
    ]
