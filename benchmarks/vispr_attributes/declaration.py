"""The benchmark's declaration, read by the shared pages through inference.benchmarks."""
from __future__ import annotations

from django.urls import reverse

from inference.benchmarks import Benchmark, DataStatus, Figure

from . import attributes, demo, report
from .kind import VisprAttributesKind


class VisprAttributes(Benchmark):
    key = VisprAttributesKind.key
    label = "VISPR attribute prediction"
    question = ("Which of VISPR's privacy attributes (68 in the 2017 release: faces, documents, addresses...) does an "
                "image show? AP per attribute and cmAP, as the VISPR paper measures it.")
    kinds = (VisprAttributesKind,)
    figures = {VisprAttributesKind.key: (
        Figure("cmap", "cmAP"), Figure("coverage", "coverage", headline=False),
        Figure("evaluated_attributes", "attributes evaluated", headline=False), Figure("omitted", "omitted", higher_is_better=False, headline=False),
    )}
    urls = "benchmarks.vispr_attributes.urls"
    home_url_name = "vispr_attributes:leaderboard"

    def data_status(self) -> DataStatus:
        n_attributes, n_images = len(attributes.imported()), attributes.vispr_images().exclude(file="").count()
        summary = f"{n_attributes} VISPR attributes, {n_images:,} VISPR images"
        why = attributes.missing()
        if why:
            return DataStatus(False, summary, why, reverse("scoring:imports"))
        return DataStatus(True, summary, "Launch a run of any provider over a split or a dataset version.",
                          reverse("inference:run_new") + f"?task={self.key}")

    def figures_url(self, run) -> str:
        return VisprAttributesKind.figures_url(run)

    def report(self, run) -> dict:
        return report.report(run)

    def export_rows(self, run):
        return report.prediction_lines(run)

    def seed_demo(self, log) -> dict:
        return demo.seed(log)

