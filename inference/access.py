"""One access helper per object type: fetch what the user may see, or answer 404."""
from __future__ import annotations

from django.http import Http404

from core.roles import ROLE_ADMIN, role_of

from .models import Run


def get_run_for_user(user, run_id: int) -> Run:
    """Runs (and the model outputs in them) are for admins only; everyone else gets 404."""
    if role_of(user) != ROLE_ADMIN:
        raise Http404("No such run.")
    try:
        return Run.objects.select_related("created_by", "annotator").get(pk=run_id)
    except Run.DoesNotExist:
        raise Http404("No such run.") from None
