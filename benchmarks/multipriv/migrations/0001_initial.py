"""MultiPriv's models move here from annotations with every row kept (issue 35): the tables stay as they
are (`db_table`), so this migration creates the models in Django's state only and touches no table.
annotations/0013_multipriv_moves_out then removes them from annotations' state and moves their
content types (permissions and admin history follow)."""

import annotations.storage
import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('annotations', '0012_labeling_assisted'),
    ]

    state_operations = [
        migrations.CreateModel(
            name='Person',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(help_text="The release's folder name, e.g. person_1.", max_length=64, unique=True)),
                ('profile', models.JSONField(default=dict, help_text="Canonical field name -> value; absent fields ('None') are null.")),
                ('raw_profile', models.JSONField(default=dict, help_text='The profile object as released (field names as written).')),
                ('profile_file', models.CharField(help_text="The profile's file name in the folder, as released.", max_length=200)),
                ('profile_sha256', models.CharField(max_length=64)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('updated_at', models.DateTimeField(auto_now=True)),
            ],
            options={
                'db_table': 'annotations_person',
                'ordering': ['name'],
            },
        ),
        migrations.CreateModel(
            name='PersonImage',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('category', models.CharField(help_text='A-G, from the file name (A1.png: category A, index 1).', max_length=1)),
                ('index', models.PositiveSmallIntegerField()),
                ('file', models.FileField(storage=annotations.storage.private_image_storage, upload_to='')),
                ('width', models.PositiveIntegerField()),
                ('height', models.PositiveIntegerField()),
                ('sha256', models.CharField(db_index=True, max_length=64)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('person', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='images', to='multipriv.person')),
            ],
            options={
                'db_table': 'annotations_personimage',
                'ordering': ['person__name', 'category', 'index'],
            },
        ),
        migrations.CreateModel(
            name='PersonPair',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('same_person', models.BooleanField()),
                ('first', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='multipriv.personimage')),
                ('second', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='multipriv.personimage')),
            ],
            options={
                'db_table': 'annotations_personpair',
            },
        ),
        migrations.AddConstraint(
            model_name='personimage',
            constraint=models.UniqueConstraint(fields=('person', 'category', 'index'), name='one_person_image_per_slot'),
        ),
        migrations.AddConstraint(
            model_name='personimage',
            constraint=models.CheckConstraint(condition=models.Q(('category__in', ['A', 'B', 'C', 'D', 'E', 'F', 'G'])), name='person_image_category_a_to_g'),
        ),
        migrations.AddConstraint(
            model_name='personpair',
            constraint=models.UniqueConstraint(fields=('first', 'second'), name='one_person_pair'),
        ),
        migrations.AddConstraint(
            model_name='personpair',
            constraint=models.CheckConstraint(condition=models.Q(('first__lt', models.F('second'))), name='person_pair_ordered'),
        ),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=state_operations, database_operations=[]),
    ]
