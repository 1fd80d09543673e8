"""The benchmark's declaration, read by the shared pages through inference.benchmarks."""
from __future__ import annotations

from django.db.models import Count
from django.urls import reverse

from inference.benchmarks import Benchmark, DataStatus

from . import demo, report
from .kinds import MultiprivProfileKind, MultiprivReidKind
from .models import Person, PersonImage, PersonPair


class MultiPriv(Benchmark):
    key = "multipriv"
    label = "MultiPriv individual level"
    question = "Can a model link several images to one person (re-identification) and rebuild their profile?"
    kinds = (MultiprivReidKind, MultiprivProfileKind)
    figures = report.FIGURES
    urls = "benchmarks.multipriv.urls"
    home_url_name = "multipriv:leaderboard"
    # Before the folder: the persons under /multipriv/, the figures under /scoring/multipriv/.
    old_paths = (("scoring/multipriv/", ""), ("multipriv/persons/", "persons/"), ("multipriv/images/", "images/"),
                 ("multipriv/", "persons/"))

    def data_status(self) -> DataStatus:
        n_persons = Person.objects.annotate(n=Count("images")).filter(n__gte=1).count()
        n_images = PersonImage.objects.count()
        summary = f"{n_persons:,} persons, {n_images:,} images, {PersonPair.objects.count():,} pairs drawn"
        why = MultiprivReidKind.unavailable()
        if why:
            return DataStatus(False, summary, "Import your copy of the MultiPriv release: manage.py import_multipriv ROOT "
                                              "(at least two images per person)", reverse("multipriv:persons"))
        return DataStatus(True, summary, "Launch a re-identification or a profile reconstruction run.",
                          reverse("inference:run_new") + f"?task={MultiprivReidKind.key}")

    def figures_url(self, run) -> str:
        return reverse("multipriv:run", args=[run.pk])

    def report(self, run) -> dict:
        return report.figures_json(run)

    def seed_demo(self, log) -> dict:
        return demo.seed_multipriv(log)
