"""A classifier run's figures: its binary private/public report against the ground truth, from its
stored P(private) scores only (`RunResult.score`).

The computation is CPRT's binary view (scoring/services/binary_view.py, scoring/binary.py: truth =
ground-truth level 1..T, precision/recall/F1 of the private class, balanced accuracy, accuracy, AUC,
95% percentile bootstrap intervals, cached on the run's and the ground truth's fingerprints); what is
this benchmark's is the decision rule: a classifier says private when P(private) >= 0.5, the argmax of
its two classes [decision, docs/classifiers.md].
"""
from __future__ import annotations

from inference.models import Run
from scoring.forms import BinaryViewForm
from scoring.models import ScoringProfile
from scoring.services.binary_view import binary_reports, finished_runs

from .kind import BinaryKind

P_PRIVATE_AT = 0.5  # private when P(private) >= this: the argmax of the two classes


def classifier_runs() -> list[Run]:
    """The finished classifier runs, in id order."""
    return finished_runs(BinaryKind.key)


def reports(runs: list[Run], profile: ScoringProfile, threshold: int) -> dict[int, dict]:
    """run id -> its binary report under the profile, private = ground-truth levels 1..threshold."""
    return binary_reports(runs, profile, threshold, P_PRIVATE_AT)


def report(run: Run, threshold: int = BinaryViewForm.DEFAULT_THRESHOLD) -> dict:
    """One run's figures (JSON-able) under the active profile."""
    return reports([run], ScoringProfile.active(), threshold)[run.pk]
