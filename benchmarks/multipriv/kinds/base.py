"""What MultiPriv's two run kinds share: their figures and their leaderboard are MultiPriv's pages."""
from __future__ import annotations

from django.urls import reverse

from inference.kinds.base import Kind


class MultiprivKind(Kind):
    selects_images = False  # a run takes persons or pairs, not CPRT's image selection

    def figures_url(self, run) -> str:
        return reverse("multipriv:run", args=[run.pk])

    @classmethod
    def leaderboard_url(cls) -> str | None:
        return reverse("multipriv:leaderboard")
