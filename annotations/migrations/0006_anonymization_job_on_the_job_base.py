"""Anonymization jobs stand on the job base (core/jobs.py): the claim token becomes the lease owner
(kept, so a worker running during the upgrade still holds its job) and gets an expiry: the last
heartbeat plus CPRT_FACES_STALE_S, after which the reconciler re-queues the job as before."""
from datetime import timedelta

from django.conf import settings
from django.db import migrations, models


def give_claims_an_expiry(apps, schema_editor):
    AnonymizationJob = apps.get_model("annotations", "AnonymizationJob")
    stale = timedelta(seconds=settings.CPRT_FACES_STALE_S)
    for job in AnonymizationJob.objects.exclude(lease_owner="").filter(status__in=("queued", "running", "cancelling")):
        last = job.heartbeat_at or job.started_at or job.created_at
        AnonymizationJob.objects.filter(pk=job.pk).update(lease_expires_at=last + stale)


class Migration(migrations.Migration):

    dependencies = [
        ('annotations', '0005_face_variants_and_anonymization_jobs'),
    ]

    operations = [
        migrations.RenameField(model_name='anonymizationjob', old_name='claim', new_name='lease_owner'),
        migrations.AlterField(
            model_name='anonymizationjob',
            name='lease_owner',
            field=models.CharField(blank=True, help_text='The task execution holding the job; empty when none.', max_length=200),
        ),
        migrations.AddField(
            model_name='anonymizationjob',
            name='lease_expires_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name='anonymizationjob',
            name='heartbeat_at',
            field=models.DateTimeField(blank=True, help_text='Last sign of life from the worker.', null=True),
        ),
        migrations.RunPython(give_claims_an_expiry, migrations.RunPython.noop),
    ]
