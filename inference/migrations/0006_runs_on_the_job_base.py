"""Runs stand on the job base (core.jobs.Job) and provider batches claim their ingest with its lease.

Data kept: `total_images` is renamed `total`; `done` is filled from the stored outcome counts; an
ingest claim (`ingest_token`, `ingest_claimed_at`) becomes a lease (`ingest_owner`,
`ingest_expires_at` = claimed at + CPRT_BATCH_INGEST_STALE_S, when it could be taken over before;
an ingested batch holds no lease).
"""
from datetime import timedelta

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def _stale_after() -> timedelta:
    return timedelta(seconds=float(getattr(settings, "CPRT_BATCH_INGEST_STALE_S", 3600)))


def fill_done(apps, schema_editor):
    Run = apps.get_model("inference", "Run")
    for run in Run.objects.exclude(outcome_counts={}).only("pk", "outcome_counts").iterator():
        done = sum(int(v) for v in (run.outcome_counts or {}).values())
        Run.objects.filter(pk=run.pk).update(done=done)


def claims_to_leases(apps, schema_editor):
    ProviderBatch = apps.get_model("inference", "ProviderBatch")
    ProviderBatch.objects.exclude(ingested_at=None).update(ingest_owner="", ingest_expires_at=None)  # done: nobody holds it
    for batch in ProviderBatch.objects.exclude(ingest_expires_at=None).only("pk", "ingest_expires_at").iterator():
        ProviderBatch.objects.filter(pk=batch.pk).update(ingest_expires_at=batch.ingest_expires_at + _stale_after())


def leases_to_claims(apps, schema_editor):
    ProviderBatch = apps.get_model("inference", "ProviderBatch")
    for batch in ProviderBatch.objects.exclude(ingest_expires_at=None).only("pk", "ingest_expires_at").iterator():
        ProviderBatch.objects.filter(pk=batch.pk).update(ingest_expires_at=batch.ingest_expires_at - _stale_after())


class Migration(migrations.Migration):

    dependencies = [
        ("inference", "0005_run_lanes"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RenameField(model_name="run", old_name="total_images", new_name="total"),
        migrations.AddField(model_name="run", name="done", field=models.PositiveIntegerField(default=0)),
        migrations.AddField(
            model_name="run", name="lease_expires_at", field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="run",
            name="lease_owner",
            field=models.CharField(blank=True, help_text="The task execution holding the job; empty when none.", max_length=200),
        ),
        migrations.AlterField(
            model_name="run",
            name="created_by",
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name="+", to=settings.AUTH_USER_MODEL),
        ),
        migrations.AlterField(
            model_name="run",
            name="heartbeat_at",
            field=models.DateTimeField(blank=True, help_text="Last sign of life from the worker.", null=True),
        ),
        migrations.RunPython(fill_done, migrations.RunPython.noop),
        migrations.RenameField(model_name="providerbatch", old_name="ingest_token", new_name="ingest_owner"),
        migrations.AlterField(
            model_name="providerbatch",
            name="ingest_owner",
            field=models.CharField(blank=True, help_text="The poller holding the ingest lease; empty when none.", max_length=200),
        ),
        migrations.RenameField(model_name="providerbatch", old_name="ingest_claimed_at", new_name="ingest_expires_at"),
        migrations.AlterField(
            model_name="providerbatch",
            name="ingest_expires_at",
            field=models.DateTimeField(blank=True, help_text="When the ingest lease runs out (its worker died).", null=True),
        ),
        migrations.RunPython(claims_to_leases, leases_to_claims),
    ]
