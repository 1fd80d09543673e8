"""A stored profile's fit_report named, under `split`, the split of the import that triggered the fit,
though the fit used every stored row of every split. Upgraded reports keep that value as
`import_split` and name the fitted splits in `split` ("test, train") and `splits` (a list), as new
fits write them (scoring/cprt_bench/importing.py `fit_report`). Nothing else changes."""
from django.db import migrations


def name_the_fitted_splits(apps, schema_editor):
    Profile = apps.get_model("scoring", "ScoringProfile")
    for profile in Profile.objects.exclude(fit_report={}).only("id", "fit_report"):
        report = profile.fit_report or {}
        per_split = report.get("per_split")
        if not isinstance(per_split, list) or "import_split" in report:
            continue
        splits = [str(r["split"]) for r in per_split if isinstance(r, dict) and "split" in r]
        report = {**report, "import_split": report.get("split"), "split": ", ".join(splits), "splits": splits}
        Profile.objects.filter(pk=profile.pk).update(fit_report=report)


def back_to_the_import_split(apps, schema_editor):
    Profile = apps.get_model("scoring", "ScoringProfile")
    for profile in Profile.objects.exclude(fit_report={}).only("id", "fit_report"):
        report = dict(profile.fit_report or {})
        if "import_split" not in report:
            continue
        report["split"] = report.pop("import_split")
        report.pop("splits", None)
        Profile.objects.filter(pk=profile.pk).update(fit_report=report)


class Migration(migrations.Migration):

    dependencies = [
        ("scoring", "0015_job_sent_at"),
    ]

    operations = [
        migrations.RunPython(name_the_fitted_splits, back_to_the_import_split),
    ]
