"""How scoring plugs into the apps below it (connected in ScoringConfig.ready()).

- annotations.signals.labels_changed -> rescore those images under every profile whose consensus they concern;
- inference.signals.annotate_run_finished -> rescore the profiles whose consensus includes the model;
- inference.signals.judge_run_finished -> precompute the run's metrics (a Celery task);
- annotations.hooks consensus scores -> the home page and image API show consensus level and score;
- annotations.hooks labels submitted -> the disagreement queues follow a reviewer's submission per image;
- inference.hooks consensus filter -> a run's image selection on consensus attribute / level.
"""
from __future__ import annotations

import logging

from core.dispatch import send_on_commit

log = logging.getLogger(__name__)


def on_labels_changed(sender, image_ids, annotator_ids=None, **kwargs) -> None:
    """Rescore the images under every profile whose consensus may have changed: all profiles with a
    consensus set, or, when the sender names the annotators whose labels changed, those that include one
    (one recompute per profile for all the images: an import changes thousands at once)."""
    from .models import ScoringProfile
    from .services.scores import recompute_scores

    profiles = ScoringProfile.objects.filter(consensus_annotators__isnull=False)
    if annotator_ids is not None:
        profiles = profiles.filter(consensus_annotators__in=annotator_ids)
    for profile in profiles.distinct().order_by("id"):
        recompute_scores(profile, image_ids)


def on_annotate_run_finished(sender, run, **kwargs) -> None:
    """New model labels change the consensus of every profile whose consensus set includes this model."""
    from .models import ScoringProfile
    from .services.scores import recompute_scores

    for profile in ScoringProfile.objects.filter(consensus_annotators=run.annotator_id):
        try:
            recompute_scores(profile, run.image_ids)
        except Exception:  # noqa: BLE001 - a scoring problem must not undo the run
            log.exception("rescoring profile %s after run %s failed", profile.pk, run.pk)


def on_judge_run_finished(sender, run_id, **kwargs) -> None:
    send_on_commit("scoring.refresh_run_metrics", [run_id])


class ConsensusScores:
    """annotations.hooks.ConsensusScores: the active profile's ImageScore rows."""

    def active_profile(self):
        from .models import ScoringProfile

        return ScoringProfile.active_or_none()

    def scores_for(self, profile, image_ids) -> dict:
        from .models import ImageScore

        return {s.image_id: s for s in ImageScore.objects.filter(profile=profile, image__in=list(image_ids))}

    def filter_images(self, profile, images, *, level=None, attribute=None):
        from django.db.models import Q

        wanted = Q(scores__profile=profile)
        if level is not None:
            wanted &= Q(scores__level=level)
        if attribute is not None:
            wanted &= Q(**{f"scores__binary_labels__{attribute}": 1})
        return images.filter(wanted)


def filter_by_consensus(images, *, attribute: str, attribute_value: int, level: int | None):
    """inference.hooks consensus filter: images whose consensus under the active profile matches."""
    from .models import ImageScore, ScoringProfile

    profile = ScoringProfile.active()
    scores = ImageScore.objects.filter(profile=profile)
    if attribute:
        scores = scores.filter(**{f"binary_labels__{attribute}": int(attribute_value or 0)})
    if level:
        scores = scores.filter(level=level)
    return images.filter(pk__in=scores.values("image_id")), profile.label


def follow_submission(image_id: int, writes: int) -> None:
    """A reviewer's submission (annotations.hooks.labels_submitted): its `writes` label-version writes."""
    from .services.disagreements import follow_image

    follow_image(image_id, writes)


def connect() -> None:
    from annotations import hooks as annotation_hooks
    from annotations.signals import labels_changed
    from inference import hooks as inference_hooks
    from inference.signals import annotate_run_finished, judge_run_finished

    labels_changed.connect(on_labels_changed, dispatch_uid="scoring.rescore_on_labels_changed")
    annotate_run_finished.connect(on_annotate_run_finished, dispatch_uid="scoring.rescore_on_annotate_run")
    judge_run_finished.connect(on_judge_run_finished, dispatch_uid="scoring.metrics_on_judge_run")
    annotation_hooks.register_consensus_scores(ConsensusScores())
    annotation_hooks.register_labels_submitted(follow_submission)
    inference_hooks.register_consensus_filter(filter_by_consensus)
