"""Which images a run covers: a split, a dataset version, optional filters, an optional seeded sample. Frozen at launch.

Filters on consensus use the active scoring profile's ImageScore rows (through inference.hooks, which scoring fills) (e.g. "consensus biometrics =
1", "consensus level 1"); "from run" keeps images a previous judge run scored at or above a
threshold (the paper's counterfactual subset was images all models judged confidently severe).
Images without stored bytes are never selected: there is nothing to send.
"""
from __future__ import annotations

import random
from dataclasses import asdict, dataclass

from annotations.datasets.models import DatasetVersion
from annotations.datasets.versions import dataset_image_ids
from annotations.models import Image

from . import hooks


@dataclass(frozen=True)
class Selection:
    split: str = "all"  # all / train / test / other
    dataset_version: str = ""  # a dataset version's name: only its member images (annotations/datasets)
    attribute: str = ""  # taxonomy key, with attribute_value
    attribute_value: int | None = None
    level: int | None = None  # consensus level 1-4
    from_run: int | None = None
    min_score: float | None = None
    also_from_runs: tuple[int, ...] = ()  # counterfactual subset: every listed judge run scored >= min_score
    sample_size: int | None = None
    seed: int = 0

    def describe(self) -> dict:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(self).items() if v not in (None, "", ())}


def select_image_ids(selection: Selection) -> tuple[list[int], dict]:
    """(sorted image ids, a description to store on the run)."""
    from inference.models import RunResult

    described = selection.describe()
    images = Image.objects.exclude(file="")
    if selection.split != "all":
        images = images.filter(split=selection.split)
    if selection.dataset_version:
        version = DatasetVersion.objects.filter(name=selection.dataset_version).first()
        if version is None:
            raise ValueError(f"There is no dataset version named {selection.dataset_version!r}.")
        images = images.filter(pk__in=dataset_image_ids(version))
    if selection.attribute or selection.level:
        images, described["profile"] = hooks.filter_by_consensus(
            images, attribute=selection.attribute, attribute_value=selection.attribute_value, level=selection.level
        )
    if selection.from_run:
        # Every chosen judge run must have scored the image (at or above min_score): the paper's
        # counterfactual subset is the images all models judged confidently severe.
        for run_id in (selection.from_run, *selection.also_from_runs):
            results = RunResult.objects.filter(run_id=run_id, outcome=RunResult.OUTCOME_OK)
            if selection.min_score is not None:
                results = results.filter(score__gte=selection.min_score)
            images = images.filter(pk__in=results.values("image_id"))
    ids = sorted(images.values_list("pk", flat=True))
    described["matched"] = len(ids)
    if selection.sample_size and selection.sample_size < len(ids):
        ids = sorted(random.Random(selection.seed).sample(ids, selection.sample_size))
    return ids, described
