"""The benchmark's declaration, read by the shared pages through inference.benchmarks."""
from __future__ import annotations

from django.urls import reverse

from inference.benchmarks import Benchmark, DataStatus, Figure
from inference.models import Run
from inference.providers.onnx.models import ClassifierModel

from . import demo, metrics
from .kind import REGISTER_HINT, BinaryKind


class LocalClassifiers(Benchmark):
    key = "local-classifiers"
    label = "Local classifiers (private/public)"
    question = ("Private or public? A local image classifier (S2P, as ONNX) gives P(private) per image; compared with the "
                "consensus levels 1..T as private, beside the judge runs' binary view, never ranked with them.")
    kinds = (BinaryKind,)
    figures = {BinaryKind.key: (
        Figure("auc", "AUC"), Figure("balanced_accuracy", "balanced accuracy"), Figure("f1_private", "F1 (private)"),
        Figure("precision_private", "precision (private)", headline=False), Figure("recall_private", "recall (private)", headline=False),
        Figure("accuracy", "accuracy", headline=False),
    )}
    urls = "benchmarks.classifiers.urls"
    home_url_name = "classifiers:leaderboard"
    # Before the folder: the classifier run page under scoring, the classifier list under runs.
    old_paths = (("scoring/runs/<id>/binary/", "runs/<id>/"), ("runs/classifiers/", "classifiers/"))

    def data_status(self) -> DataStatus:
        n_classifiers = ClassifierModel.objects.count()
        n_runs = Run.objects.filter(task=BinaryKind.key, status=Run.STATUS_FINISHED).count()
        summary = (f"{n_classifiers} local classifier{'' if n_classifiers == 1 else 's'} registered, "
                   f"{n_runs} finished classifier run{'' if n_runs == 1 else 's'}")
        if not n_classifiers:
            return DataStatus(False, summary, REGISTER_HINT[:1].upper() + REGISTER_HINT[1:] + ".", reverse("classifiers:list"))
        return DataStatus(True, summary, "Launch a run of a registered classifier over a split or a dataset version.",
                          reverse("inference:run_new") + f"?task={BinaryKind.key}")

    def figures_url(self, run) -> str:
        return BinaryKind.figures_url(run)

    def report(self, run) -> dict:
        return metrics.report(run)

    def seed_demo(self, log) -> dict:
        return demo.seed(log)
