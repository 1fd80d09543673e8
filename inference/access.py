"""One access helper per object type: fetch what the user may see, or answer 404."""
from __future__ import annotations

from django.http import Http404

from core.roles import ROLE_ADMIN, role_of

from .models import Run


def get_run_for_admin(user, run_id: int) -> Run:
    """The run pages: runs (and the model outputs in them) are for admins only; everyone else gets 404.
    The scoring pages fetch runs with scoring.access.get_run_for_review (staff)."""
    if role_of(user) != ROLE_ADMIN:
        raise Http404("No such run.")
    try:
        return Run.objects.select_related("created_by", "annotator").get(pk=run_id)
    except Run.DoesNotExist:
        raise Http404("No such run.") from None
