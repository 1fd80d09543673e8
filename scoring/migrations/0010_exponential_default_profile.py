"""The provisional default profile becomes exponential weights, base 87, lo = (0.8305, 0.50, 0.25, 0).

Spec section 3: exponential weights with base 87 and lo(1) = 0.8305 reproduce both Appendix A.6
examples, which the tight weights (330, 30, 5, 1) cannot. The stored scores of the default profile
are recomputed from their stored level counts, cached metrics are dropped (they were computed with
the old scores), and the change is recorded in the audit log. A fitted (non-provisional) active
profile stays active.
"""
from django.db import migrations

NEW_WEIGHTS = [658503, 7569, 87, 1]
NEW_LO = (0.8305, 0.50, 0.25)
OLD_WEIGHTS = [330, 30, 5, 1]
OLD_LO = (0.75, 0.50, 0.25)
SOURCE = (
    "Provisional default: exponential weights (87^3, 87^2, 87, 1) with lo(1) = 0.8305 reproduce both Appendix A.6 "
    "examples ((2,0,0,0) -> 0.94703, paper 0.947; (1,10,0,0) -> 0.87001, paper 0.870). The paper's equation and "
    "boundaries are not published; lo(2) = 0.50 and lo(3) = 0.25 are placeholders until CPRT-Bench rows are imported and fitted."
)


def _rescore(apps, profile, weights, lo):
    from scoring import engine

    import numpy as np

    ImageScore = apps.get_model("scoring", "ImageScore")
    rows = list(ImageScore.objects.filter(profile=profile))
    if rows:
        counts = np.array([(r.n1, r.n2, r.n3, r.n4) for r in rows], dtype=np.int64)
        levels, scores = engine.severity_array(counts, engine.Bounds.from_inner(*lo), weights)
        for row, level, score in zip(rows, levels, scores):
            row.level, row.score = int(level), float(score)
        ImageScore.objects.bulk_update(rows, ["level", "score"], batch_size=2000)
    return len(rows)


def _switch(apps, weights, lo, source, action):
    ScoringProfile = apps.get_model("scoring", "ScoringProfile")
    profile = ScoringProfile.objects.filter(name="provisional").first()
    if profile is None or not profile.provisional:
        return
    old = {"version": profile.version, "weights": profile.weights, "lo": [profile.lo1, profile.lo2, profile.lo3]}
    profile.weights, (profile.lo1, profile.lo2, profile.lo3) = weights, lo
    profile.version += 1
    profile.source = source
    profile.save()
    active = ScoringProfile.objects.filter(is_active=True).first()
    if active is None or active.provisional:
        ScoringProfile.objects.filter(is_active=True).exclude(pk=profile.pk).update(is_active=False)
        ScoringProfile.objects.filter(pk=profile.pk).update(is_active=True)
    rescored = _rescore(apps, profile, weights, lo)
    apps.get_model("scoring", "ComputedMetrics").objects.all().delete()
    apps.get_model("core", "AuditEvent").objects.create(
        action=action, target_type="ScoringProfile", target_id=str(profile.pk),
        data={"old": old, "new": {"version": profile.version, "weights": weights, "lo": list(lo)}, "scores_recomputed": rescored,
              "active": ScoringProfile.objects.get(pk=profile.pk).is_active, "by": "migration scoring.0010"},
    )


def forward(apps, schema_editor):
    _switch(apps, NEW_WEIGHTS, NEW_LO, SOURCE, "profile.default_changed")


def backward(apps, schema_editor):
    _switch(apps, OLD_WEIGHTS, OLD_LO, "Provisional default (tight weights), restored by reverting migration scoring.0010.",
            "profile.default_reverted")


class Migration(migrations.Migration):
    dependencies = [("scoring", "0009_export_lease"), ("core", "0001_initial")]
    operations = [migrations.RunPython(forward, backward)]
