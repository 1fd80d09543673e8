"""The benchmark's declaration, read by the shared pages through inference.benchmarks."""
from __future__ import annotations

from django.urls import reverse

from inference.benchmarks import Benchmark, DataStatus, Figure

from . import demo, reports
from .importing import run_rows
from .kind import SpyBenchKind
from .models import SpyItem, SpySet


class SpyBench(Benchmark):
    key = SpyBenchKind.key
    label = "SPY-Bench"
    question = ("Does a model answer or refuse a question about an image when the user has said which attribute is private "
                "to them? Upstream's cal_metrics (achernarwang/specify-privacy-yourself), bit-exact.")
    kinds = (SpyBenchKind,)
    figures = {SpyBenchKind.key: tuple(Figure(key, head, unit="%", headline=key == "hms") for key, head in reports.COLUMNS)}
    urls = "benchmarks.spy_bench.urls"
    home_url_name = "spy_bench:index"
    # Its pages were under /runs/spy-bench/ (inference's urls) before it became a folder.
    old_paths = (("runs/spy-bench/", ""),)

    def data_status(self) -> DataStatus:
        n_sets, n_items = SpySet.objects.count(), SpyItem.objects.count()
        summary = f"{n_sets} SPY-Bench set{'' if n_sets == 1 else 's'}, {n_items:,} items over imported VISPR test images"
        if not n_sets:
            return DataStatus(False, summary, "Import a SPY-Bench set (your benchmark file and label2text.json): "
                              "manage.py spy_import FILE --name N --label2text L2T, or the SPY-Bench page.", reverse("spy_bench:index"))
        return DataStatus(True, summary, "Launch a run of any provider over an imported set.",
                          reverse("inference:run_new") + f"?task={self.key}")

    def figures_url(self, run) -> str:
        return SpyBenchKind(run).figures_url(run)

    def report(self, run) -> dict:
        """Upstream's cal_metrics of the run's evaluated rows, per label, per scenario and with intervals ({} before any result)."""
        return reports.run_report(run)[1] or {}

    def export_rows(self, run):
        return run_rows(run)

    def seed_demo(self, log) -> dict:
        return demo.seed(log)
