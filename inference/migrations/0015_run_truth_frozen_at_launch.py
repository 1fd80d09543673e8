"""Run.truth: the truth a run is scored against, frozen at launch (MultiPriv, issue 34).

Runs made before this migration were scored against the live MultiPriv records. Their snapshot is
taken here from the records as they are when the migration runs [decision, docs/multipriv.md], with
source "migration": their figures stay what the page showed just before the upgrade, and any later
re-import no longer moves them. The snapshot's format is annotations.multipriv.truth's, written out
here so that this migration does not follow later changes of that module.
"""
from django.db import migrations, models
from django.utils import timezone


def _profile_items(Person, ids):
    return {str(p.pk): {"person": p.name, "profile": {k: v for k, v in p.profile.items() if v is not None},
                        "profile_sha256": p.profile_sha256} for p in Person.objects.filter(pk__in=ids).order_by("pk")}


def _pair_items(PersonPair, ids):
    out = {}
    for p in PersonPair.objects.filter(pk__in=ids).select_related("first__person", "second__person").order_by("pk"):
        out[str(p.pk)] = {"same_person": p.same_person, "first_id": p.first_id, "second_id": p.second_id,
                          "first": f"{p.first.person.name}/{p.first.category}{p.first.index}",
                          "second": f"{p.second.person.name}/{p.second.category}{p.second.index}",
                          "first_sha256": p.first.sha256, "second_sha256": p.second.sha256}
    return out


def freeze_existing_multipriv_runs(apps, schema_editor):
    Run = apps.get_model("inference", "Run")
    Person = apps.get_model("annotations", "Person")
    PersonPair = apps.get_model("annotations", "PersonPair")
    now = timezone.now().isoformat()
    for run in Run.objects.filter(task__in=("multipriv-profile", "multipriv-reid")).only("pk", "task", "item_ids", "truth"):
        ids = [int(i) for i in run.item_ids]
        chunks = [ids[i:i + 900] for i in range(0, len(ids), 900)]  # SQLite's bound-parameter limit
        items = {}
        for chunk in chunks:
            items.update(_profile_items(Person, chunk) if run.task == "multipriv-profile" else _pair_items(PersonPair, chunk))
        run.truth = {"frozen_at": now, "source": "migration", "items": items}
        run.save(update_fields=["truth"])


class Migration(migrations.Migration):

    dependencies = [
        ('annotations', '0008_multipriv_persons'),
        ('inference', '0014_job_sent_at'),
    ]

    operations = [
        migrations.AddField(
            model_name='run',
            name='truth',
            field=models.JSONField(blank=True, default=dict, help_text=(
                'The truth the run is scored against, frozen at launch, for kinds whose truth is re-importable data '
                '(MultiPriv: annotations.multipriv.truth); empty for the others.')),
        ),
        migrations.RunPython(freeze_existing_multipriv_runs, migrations.RunPython.noop),
    ]
