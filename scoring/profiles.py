"""Changing a scoring profile: every change is audited (old -> new) and rescores the stored scores.

A profile's boundaries, weights and consensus set decide every ImageScore stored under it, so a
change to any of them recomputes those scores in the same transaction: no page ever shows a score
computed with boundaries the profile no longer has. The admin and the CPRT-Bench import both come
through here.
"""
from __future__ import annotations

from core.audit import audit

from .models import ImageScore, ScoringProfile
from .services.scores import recompute_scores

# What decides a stored score; a change to any of these rescores.
SCORING_FIELDS = ("lo1", "lo2", "lo3", "weights", "consensus_annotators", "exclude_assisted")
AUDITED_FIELDS = ("name", "version", "lo1", "lo2", "lo3", "weights", "provisional", "source", "is_active", "consensus_annotators",
                  "exclude_assisted")


def snapshot(profile: ScoringProfile) -> dict:
    """The audited fields of a stored profile, as plain values (consensus as sorted annotator ids)."""
    if profile.pk is None:
        return {}
    stored = ScoringProfile.objects.get(pk=profile.pk)
    values = {name: getattr(stored, name) for name in AUDITED_FIELDS if name != "consensus_annotators"}
    values["consensus_annotators"] = sorted(stored.consensus_annotators.values_list("id", flat=True))
    return values


def rescore_stored(profile: ScoringProfile, exclude=()) -> dict:
    """Recompute every image that has a score under `profile` (but those in `exclude`): what a change
    of boundaries or weights needs (which images have a consensus does not depend on them)."""
    ids = set(ImageScore.objects.filter(profile=profile).values_list("image_id", flat=True)) - set(exclude)
    if not ids:
        return {"scored": 0, "incomplete": 0}
    return recompute_scores(profile, ids)


def rescore_all(profile: ScoringProfile) -> dict:
    """Recompute every image: what a change of the consensus set needs (it decides which images have one)."""
    if not profile.consensus_annotators.exists():
        deleted, _ = ImageScore.objects.filter(profile=profile).delete()  # no consensus set, no consensus
        return {"scored": 0, "incomplete": deleted}
    return recompute_scores(profile)


def record_change(actor, profile: ScoringProfile, before: dict) -> dict | None:
    """Call after a profile (and its consensus set) was saved, in the same transaction: audit what
    changed and, when something that decides a score changed, rescore. `before` is `snapshot()` taken
    before the change ({} for a new profile). Returns the rescore counts, or None if none was needed."""
    after = snapshot(profile)
    changed = {k: {"old": before.get(k), "new": v} for k, v in after.items() if before.get(k) != v}
    if not changed:
        return None
    result = None
    if "consensus_annotators" in changed or "exclude_assisted" in changed:  # both decide which images have a consensus
        result = rescore_all(profile)
    elif any(k in changed for k in SCORING_FIELDS):
        result = rescore_stored(profile)
    audit(actor, "profile.change" if before else "profile.create", profile, changes=changed, rescored=result)
    return result
